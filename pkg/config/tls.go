package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
)

// RedisTLS is what the REDIS_TLS_* variables give the Redis clients. It
// holds a private key, so it prints as the names of its files only, under
// every fmt verb, String and MarshalText.
type RedisTLS struct {
	config *tls.Config
	files  [3]string // the CA, the certificate, the key
}

// Config returns the settings that Shared.Redis merges (redis.Options.WithTLS): the
// system roots plus the CA file's certificates (RootCAs, nil without a CA
// file) and the client certificate (Certificates). It is nil when none of the
// variables is set.
func (r RedisTLS) Config() *tls.Config { return r.config }

// String returns the files set, such as "ca=/etc/redis-ca/ca.crt", or "".
func (r RedisTLS) String() string {
	var parts []string
	for i, name := range []string{"ca", "cert", "key"} {
		if r.files[i] != "" {
			parts = append(parts, name+"="+r.files[i])
		}
	}
	return strings.Join(parts, " ")
}

// Format prints String under any verb and flags.
func (r RedisTLS) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, fmt.FormatString(f, verb), r.String())
}

// MarshalText returns String.
func (r RedisTLS) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// redisTLS reads the REDIS_TLS_* files into the TLS settings of the Redis
// clients: the system roots plus the CA file's certificates, and the client
// certificate. It returns nil when none of the variables is set. Each
// problem names its variable: a file that cannot be read, a CA file without
// a certificate, a certificate without its key or the other way round, a
// key that does not match, and any of them when tlsURL is false, a REDIS_URL
// that is not rediss:// (the files would be ignored).
func (r sharedEnv) redisTLS(c *checker, tlsURL bool) *tls.Config {
	if r.RedisTLSCA == "" && r.RedisTLSCert == "" && r.RedisTLSKey == "" {
		return nil
	}
	if !tlsURL {
		for _, v := range []struct{ name, value string }{
			{"REDIS_TLS_CA_FILE", r.RedisTLSCA}, {"REDIS_TLS_CERT_FILE", r.RedisTLSCert}, {"REDIS_TLS_KEY_FILE", r.RedisTLSKey},
		} {
			if v.value != "" {
				c.fail(v.name, "is set, and REDIS_URL is not rediss://: the file would not be used")
			}
		}
		return nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	ok := true
	if r.RedisTLSCA != "" {
		cfg.RootCAs, ok = caPool(c, r.RedisTLSCA)
	}
	switch {
	case r.RedisTLSCert != "" && r.RedisTLSKey == "":
		c.fail("REDIS_TLS_KEY_FILE", "empty, yet REDIS_TLS_CERT_FILE is set: a client certificate needs its key")
		ok = false
	case r.RedisTLSCert == "" && r.RedisTLSKey != "":
		c.fail("REDIS_TLS_CERT_FILE", "empty, yet REDIS_TLS_KEY_FILE is set: a key needs its client certificate")
		ok = false
	case r.RedisTLSCert != "":
		pair, err := tls.LoadX509KeyPair(r.RedisTLSCert, r.RedisTLSKey)
		if err != nil {
			// Which of the two is wrong: the certificate if it does not
			// read or parse alone, else the key.
			name, file := "REDIS_TLS_KEY_FILE", r.RedisTLSKey
			if _, certErr := readCertificates(r.RedisTLSCert); certErr != nil {
				name, file, err = "REDIS_TLS_CERT_FILE", r.RedisTLSCert, certErr
			}
			c.fail(name, "%q: %w", file, err)
			ok = false
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if !ok {
		return nil
	}
	return cfg
}

// caPool returns the system roots with the certificates of the PEM file
// added.
func caPool(c *checker, file string) (*x509.CertPool, bool) {
	certs, err := readCertificates(file)
	if err != nil {
		c.fail("REDIS_TLS_CA_FILE", "%q: %w", file, err)
		return nil, false
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	for _, cert := range certs {
		pool.AddCert(cert)
	}
	return pool, true
}

// readCertificates returns every certificate of a PEM file, and an error when
// it cannot be read or holds none.
func readCertificates(file string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		// The *PathError repeats the file name; its Err says what failed.
		if pe := (*os.PathError)(nil); errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, err
	}
	var certs []*x509.Certificate
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("a certificate does not parse: %w", err)
		}
		certs = append(certs, cert)
	}
	if len(certs) == 0 {
		return nil, errors.New("holds no PEM certificate")
	}
	return certs, nil
}
