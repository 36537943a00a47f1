package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a private certificate authority made for one test, with its
// certificate in a PEM file, as REDIS_TLS_CA_FILE takes it.
type CA struct {
	t    testing.TB
	File string // the CA certificate, PEM
	Pool *x509.CertPool

	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
}

// NewCA makes a CA and writes its certificate to a file in a temporary
// directory.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "redistest CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("create CA certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("parse CA certificate: %v", err)
	}
	ca := &CA{t: t, Pool: x509.NewCertPool(), cert: cert, key: key, dir: t.TempDir()}
	ca.Pool.AddCert(cert)
	ca.File = ca.write("ca.pem", "CERTIFICATE", der)
	return ca
}

// Issue makes a certificate signed by the CA for 127.0.0.1 and localhost,
// good for a server and a client, and returns the files of the certificate
// and its key (PEM), named after name.
func (ca *CA) Issue(name string) (certFile, keyFile string) {
	ca.t.Helper()
	key := newKey(ca.t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(ca.t),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatalf("issue %s: %v", name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		ca.t.Fatalf("marshal key of %s: %v", name, err)
	}
	return ca.write(name+".pem", "CERTIFICATE", der), ca.write(name+".key", "EC PRIVATE KEY", keyDER)
}

// StartTLS runs redis-server as Start does, but on a TLS port only (no
// plain-text port), with a certificate for 127.0.0.1 signed by ca, and
// client certificates optional (pass "--tls-auth-clients", "yes" to require
// one). As a replica it replicates over TLS. Its URL is rediss://; Do,
// Query and Info speak TLS to it.
func StartTLS(t testing.TB, ca *CA, args ...string) *Server {
	t.Helper()
	return start(t, &Server{t: t, ca: ca, tls: ca.client(),
		args: append(append(ca.serverArgs("redis-server"), "--tls-replication", "yes"), args...)})
}

// serverArgs are the TLS arguments of a redis-server (or a sentinel, as
// config lines) with a certificate for name signed by ca, client certificates
// optional.
func (ca *CA) serverArgs(name string) []string {
	certFile, keyFile := ca.Issue(name)
	return []string{
		"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-ca-cert-file", ca.File,
		"--tls-auth-clients", "optional",
	}
}

// client is how the package's administration reaches a server of ca: with
// ca's trust and a client certificate of its own.
func (ca *CA) client() *tls.Config {
	ca.t.Helper()
	client, err := tls.LoadX509KeyPair(ca.Issue("redistest-client"))
	if err != nil {
		ca.t.Fatalf("load the test's client certificate: %v", err)
	}
	return &tls.Config{RootCAs: ca.Pool, Certificates: []tls.Certificate{client}, MinVersion: tls.VersionTLS12}
}

func (ca *CA) write(name, blockType string, der []byte) string {
	ca.t.Helper()
	file := filepath.Join(ca.dir, name)
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600); err != nil {
		ca.t.Fatalf("write %s: %v", file, err)
	}
	return file
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generate key: %v", err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatalf("serial number: %v", err)
	}
	return n
}
