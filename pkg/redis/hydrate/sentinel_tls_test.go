package hydrate_test

import (
	"crypto/tls"
	"testing"

	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/test/redistest"
)

// TestThroughTLSSentinels: with a rediss:// URL and master_set, the
// Hydrator asks the sentinels over TLS too, trusting the CA of WithTLS, and
// reads the primary they name.
func TestThroughTLSSentinels(t *testing.T) {
	t.Parallel()
	ca := redistest.NewCA(t)
	primary := redistest.StartTLS(t, ca)
	sentinels := redistest.StartSentinels(t, "craft", primary, 1, 1)
	put(t, primary, "photocraft", base, "v0.5.0")

	o, err := redis.Parse(redistest.SentinelURL("craft", sentinels...))
	if err != nil {
		t.Fatal(err)
	}
	hs := startOn(t, o.WithTLS(&tls.Config{RootCAs: ca.Pool}), testApps, quiet)
	hs.waitLoaded(t)
	if got, _ := hs.sink.state(); describe(got["photocraft"]) != describe(entry(base, "v0.5.0")) {
		t.Errorf("photocraft = %s, want %s", describe(got["photocraft"]), describe(entry(base, "v0.5.0")))
	}
}
