package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/cloudflare"
	"github.com/storytold/craft-releases/test/fakecloudflare"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/mariadbtest"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestReleaseControl: an operator's verbs reach every pod of a split
// deployment (two pollers with MySQL and Cloudflare, two pods): a release
// staged at 10 %, raised, halted and withdrawn, and a minimum version, each
// seen by both pods within a minute of the verb and purged from Cloudflare
// (the first five: a poller purges at most five times a minute), the release before the staged one read from the release history the
// pollers keep once the app has a decision.
func TestReleaseControl(t *testing.T) {
	t.Parallel()
	const repo, apps = "storytold/photocraft", "photocraft=PhotoCraft=storytold/photocraft"
	gh := fakegithub.New(t)
	older, newer := fakegithub.NewRelease(repo, "v1.0.0"), fakegithub.NewRelease(repo, "v2.0.0")
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	next := day.AddDate(0, 0, 1)
	older.PublishedAt, newer.PublishedAt = &day, &next
	gh.Publish(repo, newer)
	gh.SetList(repo, newer, older)
	rs, cf := redistest.Start(t), fakecloudflare.Start(t)
	const public = "https://releases.example.com"
	d := deployment{gh: gh, url: rs.URL(), apps: apps, pollerEnv: map[string]string{"MYSQL_DSN": mariadbtest.Shared(t).NewDatabase(t).DSN(),
		"CLOUDFLARE_API_TOKEN": cfToken, "CLOUDFLARE_ZONE_ID": cfZone, "CLOUDFLARE_API_URL": cf.URL(), "CRAFT_APPS_PUBLIC_URL": public}}
	verb := func(args ...string) {
		t.Helper()
		cmd := exec.Command(binary(t, "poller"), args...)
		cmd.Env = os.Environ()
		for k, v := range d.env("poller") {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("poller %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	verb("migrate")
	d.pollers(t, 2)
	pods := d.pods(t, 2)
	waitTags(t, map[string]string{"photocraft": "v2.0.0"}, pods...)

	for i, step := range []struct {
		args   []string
		latest string // latest_release's tag
		shows  string // what the app's object shows of the decision
	}{
		{[]string{"rollout", "photocraft", "--tag", "v2.0.0", "--percent", "10", "--by", "e2e"}, "v1.0.0", `"rollout":{"tag":"v2.0.0","percent":10,`},
		{[]string{"rollout", "photocraft", "--tag", "v2.0.0", "--percent", "50", "--by", "e2e"}, "v1.0.0", `"rollout":{"tag":"v2.0.0","percent":50,`},
		{[]string{"rollout", "photocraft", "--tag", "v2.0.0", "--percent", "0", "--by", "e2e"}, "v1.0.0", `"rollout":{"tag":"v2.0.0","percent":0,`},
		{[]string{"withdraw", "photocraft", "--tag", "v2.0.0", "--reason", "crashes at start", "--by", "e2e"}, "v1.0.0", `"rollout":null`},
		{[]string{"minimum", "photocraft", "--version", "1.0.0", "--reason", "a data loss bug", "--by", "e2e"}, "v1.0.0", `"minimum_version":"1.0.0"`},
		{[]string{"withdraw", "photocraft", "--tag", "v2.0.0", "--restore", "--by", "e2e"}, "v1.0.0", `"rollout":{"tag":"v2.0.0","percent":0,`},
		{[]string{"rollout", "photocraft", "--tag", "v2.0.0", "--percent", "100", "--by", "e2e"}, "v2.0.0", `"rollout":null`},
	} {
		began := time.Now()
		verb(step.args...)
		for _, p := range pods {
			testkit.Eventually(t, fmt.Sprintf("%s after %s", p.name, strings.Join(step.args, " ")), func() bool {
				a, err := ask(p.base + "/v1/craft_apps/release_info/photocraft")
				return err == nil && strings.Contains(string(a.body), `"latest_release":{"tag":"`+step.latest+`"`) && strings.Contains(string(a.body), step.shows)
			})
		}
		took := time.Since(began)
		if i >= cloudflare.DefaultBurst {
			// Each poller's purges keep to Cloudflare's lowest rate, 5 calls
			// a minute: a sixth change in the minute waits for it.
			t.Logf("%s: every pod within %v", strings.Join(step.args[:min(len(step.args), 5)], " "), took.Round(time.Millisecond))
			continue
		}
		testkit.Eventually(t, "the purge of the app's answer after "+strings.Join(step.args, " "), func() bool {
			return slices.ContainsFunc(cf.Calls(), func(c fakecloudflare.Call) bool {
				return c.At.After(began) && slices.Contains(c.Files, public+"/v1/craft_apps/release_info/photocraft")
			})
		})
		tookPurge := time.Since(began)
		t.Logf("%s: every pod within %v, purged from Cloudflare within %v", strings.Join(step.args[:min(len(step.args), 5)], " "),
			took.Round(time.Millisecond), tookPurge.Round(time.Millisecond))
		if tookPurge > time.Minute {
			t.Errorf("%s reached every pod after %v and Cloudflare after %v, want within a minute", step.args[0], took, tookPurge)
		}
	}
	if got := gh.Count(fakegithub.TagOf(repo, "v2.0.0")); got != 1 {
		t.Errorf("GitHub was asked about v2.0.0 %d times, want once: by the first verb that named it", got)
	}
}
