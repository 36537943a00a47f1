package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestReadinessWithAWrongPassword: a poller rolled out with a wrong Redis
// password stays unready and says why, so the rollout stalls with the old
// pollers coordinating, and is ready once Redis accepts it (an outage is
// TestPollerStartsWithRedisDownAndCarriesOnStandalone).
func TestReadinessWithAWrongPassword(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	rs.MustDo("ACL", "SETUSER", "poller", "on", ">old", "~*", "&*", "+@all")
	base, p := startPoller(t, env(fakegithub.New(t), "redis://poller:new-secret@"+rs.Addr))
	testkit.Eventually(t, "the error line", func() bool {
		return strings.Contains(p.Logs.String(), "redis refuses this poller, staying unready")
	})
	if got := testkit.Status(base + "/readyz"); got != http.StatusServiceUnavailable {
		t.Fatalf("readyz got %d, want 503 while Redis refuses the poller", got)
	}
	if out := p.Logs.String(); !strings.Contains(out, `"err":"status: WRONGPASS`) || strings.Contains(out, "new-secret") {
		t.Errorf("want the error line to name WRONGPASS and never the password:\n%s", out)
	}
	rs.MustDo("ACL", "SETUSER", "poller", ">new-secret")
	testkit.Eventually(t, "ready once Redis accepts it", ready(base))
}
