package check

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// redisTLSVars returns the variables that name a PEM file of the Redis
// client, each with what stands in for it when the settings load.
func redisTLSVars() map[string]func() (string, error) {
	return map[string]func() (string, error){
		"REDIS_TLS_CA_FILE":   func() (string, error) { f, err := standInPEM(); return f.cert, err },
		"REDIS_TLS_CERT_FILE": func() (string, error) { f, err := standInPEM(); return f.cert, err },
		"REDIS_TLS_KEY_FILE":  func() (string, error) { f, err := standInPEM(); return f.key, err },
	}
}

// withTLSStandIns returns vars with each REDIS_TLS_* file replaced by a
// stand-in PEM file of the same kind (the real one lives in a Secret the
// rendering does not hold; checkRedisTLS checks where it is mounted), and a
// stand-in REDIS_URL made rediss://, as a URL with those files must be. vars
// is not changed.
func withTLSStandIns(vars map[string]variable) (map[string]variable, error) {
	out := make(map[string]variable, len(vars))
	tls := false
	for name, v := range vars {
		if standIn, ok := redisTLSVars()[name]; ok && v.value != "" {
			file, err := standIn()
			if err != nil {
				return nil, err
			}
			v.value, tls = file, true
		}
		out[name] = v
	}
	if u, ok := out["REDIS_URL"]; ok && tls && u.value == secretStandIn("REDIS_URL") {
		u.value = "rediss" + strings.TrimPrefix(u.value, "redis")
		out["REDIS_URL"] = u
	}
	return out, nil
}

// checkRedisTLS: every REDIS_TLS_* file a container names is an absolute
// path in a read-only mount of a Secret volume that is not optional and that
// holds the file, so that the pod gets it from a Secret and does not start
// without it (the binary would stop at start-up anyway, naming the variable).
func checkRedisTLS(s *Resolved) []string {
	var problems []string
	for _, w := range s.binaries {
		vars := w.vars
		for name := range redisTLSVars() {
			v, ok := vars[name]
			if !ok || v.value == "" {
				continue
			}
			if problem := secretFile(w.workload, v.value); problem != "" {
				problems = append(problems, fmt.Sprintf("%s: %s=%s %s", w, name, v.value, problem))
			}
		}
	}
	return problems
}

// secretFile says what is wrong with file as a file of a Secret mounted in
// w's container, or "".
func secretFile(w workload, file string) string {
	if !path.IsAbs(file) {
		return "is not an absolute path"
	}
	for _, m := range w.c.VolumeMounts {
		rel, ok := strings.CutPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok {
			continue
		}
		if m.SubPath != "" {
			return "is in a subPath mount, which a rotated Secret does not update"
		}
		if !m.ReadOnly {
			return "is in a mount that is not read-only"
		}
		var vol *corev1.Volume
		for i := range w.pod().Volumes {
			if w.pod().Volumes[i].Name == m.Name {
				vol = &w.pod().Volumes[i]
			}
		}
		switch {
		case vol == nil:
			return fmt.Sprintf("is in the mount of volume %s, which the pod does not have", m.Name)
		case vol.Secret == nil:
			return fmt.Sprintf("is in volume %s, which is not a Secret", m.Name)
		case vol.Secret.Optional != nil && *vol.Secret.Optional:
			return fmt.Sprintf("is in volume %s, whose Secret is optional: a pod without it would not reach Redis", m.Name)
		}
		if len(vol.Secret.Items) == 0 {
			return ""
		}
		for _, it := range vol.Secret.Items {
			if it.Path == rel {
				return ""
			}
		}
		return fmt.Sprintf("is not among the items of Secret %s in volume %s", vol.Secret.SecretName, m.Name)
	}
	return "is in no volume mount of the container"
}

// standInFiles are a self-signed certificate and its key, for loading
// settings that name PEM files.
type standInFiles struct{ cert, key string }

var standIn struct {
	once  sync.Once
	files standInFiles
	err   error
}

// standInPEM writes the stand-in files once, to a temporary directory.
func standInPEM() (standInFiles, error) {
	standIn.once.Do(func() { standIn.files, standIn.err = writeStandInPEM() })
	return standIn.files, standIn.err
}

func writeStandInPEM() (standInFiles, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return standInFiles{}, fmt.Errorf("stand-in key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "deploy/check stand-in"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return standInFiles{}, fmt.Errorf("stand-in certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return standInFiles{}, fmt.Errorf("stand-in key: %w", err)
	}
	dir, err := os.MkdirTemp("", "deploy-check-")
	if err != nil {
		return standInFiles{}, err
	}
	f := standInFiles{cert: filepath.Join(dir, "cert.pem"), key: filepath.Join(dir, "key.pem")}
	if err := os.WriteFile(f.cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return standInFiles{}, err
	}
	if err := os.WriteFile(f.key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return standInFiles{}, err
	}
	return f, nil
}
