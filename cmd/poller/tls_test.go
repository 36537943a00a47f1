package main

import (
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestPollerOverTLSWithAPrivateCA: the poller writes to a rediss:// Redis
// whose certificate a private CA signed, and which asks for a client
// certificate, when REDIS_TLS_CA_FILE names that CA and REDIS_TLS_CERT_FILE
// and REDIS_TLS_KEY_FILE the poller's; it refuses the certificate without
// the CA, saying so in its log, and asks GitHub all the same.
func TestPollerOverTLSWithAPrivateCA(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	gh.Publish("storytold/photocraft", fakegithub.NewRelease("storytold/photocraft", "v0.5.0"))
	ca := redistest.NewCA(t)

	t.Run("with the CA and a client certificate", func(t *testing.T) {
		rs := redistest.StartTLS(t, ca, "--tls-auth-clients", "yes")
		cert, key := ca.Issue("poller")
		vars := env(gh, rs.URL())
		vars["REDIS_TLS_CA_FILE"], vars["REDIS_TLS_CERT_FILE"], vars["REDIS_TLS_KEY_FILE"] = ca.File, cert, key
		base, _ := startPoller(t, vars)
		testkit.Eventually(t, "readyz after the start-up load over TLS", ready(base))
		testkit.Eventually(t, "photocraft in Redis", func() bool {
			n, err := rs.Do("HEXISTS", store.AppKey("photocraft"), "etag")
			return err == nil && n == "1"
		})
	})
	t.Run("without the CA", func(t *testing.T) {
		rs := redistest.StartTLS(t, ca)
		before := gh.Count("storytold/photocraft")
		_, p := startPoller(t, env(gh, rs.URL()))
		testkit.Eventually(t, "the refused certificate in the log", func() bool {
			return strings.Contains(p.Logs.String(), "certificate signed by unknown authority")
		})
		testkit.Eventually(t, "GitHub asked anyway, with the system roots", func() bool { return gh.Count("storytold/photocraft") > before })
		if n := rs.MustDo("EXISTS", store.AppKey("photocraft")); n != "0" {
			t.Errorf("a poller that refused Redis's certificate wrote to it")
		}
	})
}
