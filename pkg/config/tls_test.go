package config_test

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/test/redistest"
)

func TestRedisTLS(t *testing.T) {
	ca := redistest.NewCA(t)
	cert, key := ca.Issue("poller")
	vars := env("REDIS_URL", "rediss://redis.internal:6380", "REDIS_TLS_CA_FILE", ca.File, "REDIS_TLS_CERT_FILE", cert, "REDIS_TLS_KEY_FILE", key)
	for _, bin := range binaries {
		t.Run(bin.name, func(t *testing.T) {
			s, _, err := bin.load(t, vars)
			if err != nil || s.Redis.TLS.Config() == nil {
				t.Fatalf("RedisTLS is nil (error %v), want the CA and the client certificate", err)
			}
			if n := len(s.Redis.TLS.Config().Certificates); n != 1 {
				t.Errorf("got %d client certificates, want 1", n)
			}
			// A certificate the CA issued verifies against the roots.
			server, _ := ca.Issue("redis")
			data, err := os.ReadFile(server)
			must(t, err)
			block, _ := pem.Decode(data)
			issued, err := x509.ParseCertificate(block.Bytes)
			must(t, err)
			if _, err := issued.Verify(x509.VerifyOptions{Roots: s.Redis.TLS.Config().RootCAs}); err != nil {
				t.Errorf("a certificate of the CA does not verify against RedisTLS.RootCAs: %v", err)
			}
		})
	}
	// The private key is never printed: the settings print as the files.
	p, _, err := loadPoller(vars)
	must(t, err)
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("json of the settings: %v", err)
	}
	files := "ca=" + ca.File + " cert=" + cert + " key=" + key
	for _, out := range []string{fmt.Sprintf("%v", p), fmt.Sprintf("%+v", p), fmt.Sprintf("%#v", p), string(b)} {
		if !strings.Contains(out, files) || strings.Contains(out, "PrivateKey") || strings.Contains(out, "Certificates") {
			t.Errorf("printed settings show more than the files %q:\n%s", files, out)
		}
	}
	if a, _, err := config.LoadAPI(lookup(env("REDIS_URL", "rediss://redis.internal:6380"))); err != nil || a.Redis.TLS.Config() != nil {
		t.Errorf("RedisTLS without REDIS_TLS_* = %v (error %v), want nil (rueidis's own: the system roots)", a.Redis.TLS, err)
	}
	a, _, err := config.LoadAPI(lookup(env("REDIS_URL", "rediss://r:6380", "REDIS_TLS_CA_FILE", ca.File)))
	if tls := a.Redis.TLS.Config(); err != nil || tls == nil || tls.RootCAs == nil || len(tls.Certificates) != 0 {
		t.Errorf("RedisTLS with a CA alone = %+v (error %v), want roots and no certificate", a.Redis.TLS, err)
	}
}

func TestRedisTLSBad(t *testing.T) {
	ca := redistest.NewCA(t)
	cert, key := ca.Issue("poller")
	_, otherKey := ca.Issue("other")
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	must(t, os.WriteFile(garbage, []byte("not a certificate\n"), 0o600))
	tests := []struct {
		name string
		vars map[string]string
		want string // the error names the variable
	}{
		{"CA missing", map[string]string{"REDIS_TLS_CA_FILE": filepath.Join(dir, "nope.pem")}, `REDIS_TLS_CA_FILE: "` + filepath.Join(dir, "nope.pem") + `": no such file`},
		{"CA without a certificate", map[string]string{"REDIS_TLS_CA_FILE": garbage}, "REDIS_TLS_CA_FILE: " + `"` + garbage + `": holds no PEM certificate`},
		{"CA is a key", map[string]string{"REDIS_TLS_CA_FILE": key}, "REDIS_TLS_CA_FILE"},
		{"certificate without key", map[string]string{"REDIS_TLS_CERT_FILE": cert}, "REDIS_TLS_KEY_FILE: empty"},
		{"key without certificate", map[string]string{"REDIS_TLS_KEY_FILE": key}, "REDIS_TLS_CERT_FILE: empty"},
		{"certificate missing", map[string]string{"REDIS_TLS_CERT_FILE": filepath.Join(dir, "c.pem"), "REDIS_TLS_KEY_FILE": key}, "REDIS_TLS_CERT_FILE"},
		{"certificate garbage", map[string]string{"REDIS_TLS_CERT_FILE": garbage, "REDIS_TLS_KEY_FILE": key}, "REDIS_TLS_CERT_FILE"},
		{"key missing", map[string]string{"REDIS_TLS_CERT_FILE": cert, "REDIS_TLS_KEY_FILE": filepath.Join(dir, "k.pem")}, "REDIS_TLS_KEY_FILE"},
		{"key of another certificate", map[string]string{"REDIS_TLS_CERT_FILE": cert, "REDIS_TLS_KEY_FILE": otherKey}, "REDIS_TLS_KEY_FILE"},
		{"CA with redis://", map[string]string{"REDIS_URL": "redis://r:6379", "REDIS_TLS_CA_FILE": ca.File}, "REDIS_TLS_CA_FILE: is set, and REDIS_URL is not rediss://"},
		{"certificate with redis://", map[string]string{"REDIS_URL": "redis://r:6379", "REDIS_TLS_CERT_FILE": cert, "REDIS_TLS_KEY_FILE": key}, "REDIS_TLS_CERT_FILE: is set, and REDIS_URL is not rediss://"},
		{"CA without REDIS_URL", map[string]string{"REDIS_URL": "", "REDIS_TLS_CA_FILE": ca.File}, "REDIS_TLS_CA_FILE: is set"},
	}
	for _, tc := range tests {
		for _, bin := range binaries {
			t.Run(tc.name+"/"+bin.name, func(t *testing.T) {
				_, _, err := bin.load(t, with(tc.vars, "REDIS_URL", "rediss://r:6380", coordVar, "false"))
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("load got %v, want an error containing %q", err, tc.want)
				}
			})
		}
	}
}

// TestRedisURLReportedFirst: a REDIS_URL that does not parse is the first
// problem reported, and the TLS files beside it are not blamed for it.
func TestRedisURLReportedFirst(t *testing.T) {
	ca := redistest.NewCA(t)
	for _, bin := range binaries {
		_, _, err := bin.load(t, env("REDIS_URL", "http://r:6379", "REDIS_TLS_CA_FILE", ca.File))
		if err == nil || !strings.HasPrefix(err.Error(), "REDIS_URL: ") || strings.Contains(err.Error(), "REDIS_TLS_CA_FILE") {
			t.Errorf("%s: load got %v, want one error, naming REDIS_URL", bin.name, err)
		}
	}
}
