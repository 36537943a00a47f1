package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestReadinessRefusedVersusOutage: the rollout that rotated the Redis
// password wrongly. A pod whose Redis refuses its password stays unready past
// the hydrate timeout, with an error line that says why, so the rollout
// stalls with the old pods serving; a pod that faces a Redis outage is ready
// after the hydrate timeout as before.
func TestReadinessRefusedVersusOutage(t *testing.T) {
	t.Parallel()
	t.Run("a wrong password", func(t *testing.T) {
		rs := redistest.Start(t)
		rs.MustDo("ACL", "SETUSER", "api", "on", ">old", "~*", "&*", "+@all")
		p := start(t, map[string]string{
			"REDIS_URL":                       "redis://api:new-secret@" + rs.Addr,
			"CRAFT_APPS_RELEASE_APPS":         testApps,
			"CRAFT_APPS_HYDRATE_TIMEOUT_SECS": "1",
		})
		testkit.Eventually(t, "the error line", func() bool {
			return strings.Contains(p.logs.String(), `"level":"error"`) && strings.Contains(p.logs.String(), "redis refuses this pod, staying unready")
		})
		if res, _ := testkit.Get(t, p.base+"/readyz"); res.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("readyz past the hydrate timeout got %d, want 503", res.StatusCode)
		}
		if logs := p.logs.String(); !strings.Contains(logs, "WRONGPASS") || strings.Contains(logs, "new-secret") {
			t.Errorf("want the error line to name WRONGPASS and never the password:\n%s", logs)
		}
		// The user takes the new password as well: the pod loads and serves.
		rs.MustDo("ACL", "SETUSER", "api", ">new-secret")
		testkit.Eventually(t, "ready after the first load", func() bool {
			res, _ := testkit.Get(t, p.base+"/readyz")
			return res.StatusCode == http.StatusOK
		})
	})
	t.Run("redis refusing connections", func(t *testing.T) {
		rs := redistest.Start(t)
		rs.Stop()
		p := start(t, map[string]string{
			"REDIS_URL":                       rs.URL(),
			"CRAFT_APPS_RELEASE_APPS":         testApps,
			"CRAFT_APPS_HYDRATE_TIMEOUT_SECS": "1",
		})
		testkit.Eventually(t, "ready after the hydrate timeout", func() bool {
			res, _ := testkit.Get(t, p.base+"/readyz")
			return res.StatusCode == http.StatusOK
		})
		if logs := p.logs.String(); !strings.Contains(logs, "ready without a load from redis") || strings.Contains(logs, "staying unready") {
			t.Errorf("want ready without a load and no refusal:\n%s", logs)
		}
	})
}
