package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

func readyz(base string) int {
	res, err := http.Get(base + "/readyz")
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// TestReadinessRefusedVersusOutage: a poller rolled out with a wrong Redis
// password stays unready and says why, so the rollout stalls with the old
// pollers coordinating, and is ready once Redis accepts it; a poller facing
// a Redis outage is ready and runs standalone, as before.
func TestReadinessRefusedVersusOutage(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	t.Run("a wrong password", func(t *testing.T) {
		rs := redistest.Start(t)
		rs.MustDo("ACL", "SETUSER", "poller", "on", ">old", "~*", "&*", "+@all")
		base, logs, _ := startPoller(t, env(gh, "redis://poller:new-secret@"+rs.Addr))
		testkit.Eventually(t, "the error line", func() bool {
			return strings.Contains(logs.String(), "redis refuses this poller, staying unready")
		})
		if got := readyz(base); got != http.StatusServiceUnavailable {
			t.Fatalf("readyz got %d, want 503 while Redis refuses the poller", got)
		}
		if out := logs.String(); !strings.Contains(out, `"err":"status: WRONGPASS`) || strings.Contains(out, "new-secret") {
			t.Errorf("want the error line to name WRONGPASS and never the password:\n%s", out)
		}
		rs.MustDo("ACL", "SETUSER", "poller", ">new-secret")
		testkit.Eventually(t, "ready once Redis accepts it", func() bool { return readyz(base) == http.StatusOK })
	})
	t.Run("redis refusing connections", func(t *testing.T) {
		rs := redistest.Start(t)
		rs.Stop()
		base, logs, _ := startPoller(t, env(gh, rs.URL()))
		testkit.Eventually(t, "ready", func() bool { return readyz(base) == http.StatusOK })
		if strings.Contains(logs.String(), "staying unready") {
			t.Errorf("an outage logged a refusal:\n%s", logs)
		}
	})
}
