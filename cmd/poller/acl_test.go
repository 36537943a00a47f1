package main

import (
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/mariadbtest"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestPollerAsItsLeastPrivilegeUser runs the poller as the user of
// store.PollerACL (docs/operations.md) through everything it does with Redis:
// claims and fetches, 304s, a failure, the fleet backoff, the meta from MySQL
// (its pool logged once, without the password, and the statement cap
// checked), then `poller status`, `poller backoff clear` and `poller rollout`
// (which publishes the decision and asks the pollers for the app's history).
// Redis denies it nothing (its ACL LOG stays empty) and the guarded-write
// script is never refused: a new command the poller sends fails here, not in
// a deploy.
func TestPollerAsItsLeastPrivilegeUser(t *testing.T) {
	t.Parallel()
	d := mariadbtest.Shared(t).NewDatabase(t)
	mysql := map[string]string{"MYSQL_DSN": d.DSN()}
	mustCommand(t, mysql, "migrate")
	mustCommand(t, mysql, "notices", "add", "--kind", "alert", "--title", "Hello from MySQL")

	rs := redistest.Start(t)
	rs.MustDo(store.SetUser("craft-poller", "poller-secret", store.PollerACL)...)
	gh := fakegithub.New(t)
	gh.Publish("storytold/photocraft", fakegithub.NewRelease("storytold/photocraft", "v0.5.0"))
	gh.Publish("storytold/vectorcraft", fakegithub.NewRelease("storytold/vectorcraft", "v1.0.0"))
	vars := env(gh, "redis://craft-poller:poller-secret@"+rs.Addr)
	vars["CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS"] = "1"
	vars["MYSQL_DSN"] = d.DSN()
	vars["CRAFT_APPS_META_REFRESH_SECS"] = "1"
	base, p := startPoller(t, vars)
	hexists := func(key, field string) func() bool {
		return func() bool { n, err := rs.Do("HEXISTS", key, field); return err == nil && n == "1" }
	}

	testkit.Eventually(t, "ready", ready(base))
	testkit.Eventually(t, "both apps fetched", func() bool {
		return hexists(store.AppKey("photocraft"), "etag")() && hexists(store.AppKey("vectorcraft"), "etag")()
	})
	testkit.Eventually(t, "a 304", func() bool {
		for _, r := range gh.Requests() {
			if r.Repo == "storytold/photocraft" && r.IfNoneMatch != "" {
				return true
			}
		}
		return false
	})
	testkit.Eventually(t, "the alert from MySQL", func() bool {
		return strings.Contains(hget(t, rs, store.MetaKey, "alerts"), "Hello from MySQL")
	})
	gh.Stick("storytold/vectorcraft", fakegithub.ServerError())
	testkit.Eventually(t, "vectorcraft's failure", hexists(store.AppKey("vectorcraft"), "failed_ms"))
	gh.Stick("storytold/photocraft", fakegithub.RateLimit(time.Now().Add(time.Hour)))
	testkit.Eventually(t, "the fleet backoff", hexists(store.BackoffKey, "until_ms"))
	if err := p.Stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	logs := p.Logs.String()
	for _, want := range []string{`"msg":"mysql pool"`, `"max_connections":4`, `"max_lifetime":600`, `"interpolate_params":true`,
		`"msg":"prepared statements within the server's cap"`, `"max_prepared_stmt_count":16382`, `"fleet_worst_case":12`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
	if n := strings.Count(logs, `"msg":"mysql pool"`); n != 1 || strings.Contains(logs, d.Password) {
		t.Errorf("%d pool lines (want 1), or the logs hold the MySQL password:\n%s", n, logs)
	}

	if out := mustCommand(t, vars, "status"); !strings.Contains(out, "v0.5.0") || !strings.Contains(out, "fleet backoff: ACTIVE") {
		t.Errorf("status as the poller's user:\n%s", out)
	}
	if out := mustCommand(t, vars, "backoff", "clear", "--by", "test"); !strings.Contains(out, "fleet backoff cleared by test") {
		t.Errorf("backoff clear as the poller's user: %q", out)
	}
	if out := mustCommand(t, vars, "rollout", "photocraft", "--tag", "v0.5.0", "--percent", "10", "--by", "test"); !strings.Contains(out, "published to Redis") {
		t.Errorf("rollout as the poller's user: %q", out)
	}
	if n := rs.MustDo("EXISTS", store.BackoffKey); n != "0" {
		t.Errorf("the backoff hash is still there after backoff clear")
	}

	if denied := rs.Denied(); len(denied) > 0 {
		t.Errorf("Redis denied the poller's user (store.PollerACL lacks a right):\n%s", strings.Join(denied, "\n"))
	}
	if strings.Contains(logs, "refused the guarded-write script") {
		t.Errorf("the script was refused under store.PollerACL:\n%s", p.Logs)
	}
}
