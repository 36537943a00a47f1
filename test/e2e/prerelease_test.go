package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// prereleaseApps puts photocraft and vectorcraft on the pre-release channel;
// filmcraft stays off it.
const prereleaseApps = "photocraft,vectorcraft"

// prerelease returns repo's tag as a published prerelease, hours after the
// fake's stable releases.
func prerelease(repo, tag string, hours int) fakegithub.Release {
	r := fakegithub.NewRelease(repo, tag)
	r.Prerelease = true
	at := r.PublishedAt.Add(time.Duration(hours) * time.Hour)
	r.PublishedAt = &at
	return r
}

// publishChannels sets the lists the channel tests start from: photocraft's
// has a draft first, then a pre-release newer than its release; vectorcraft's
// only a pre-release older than its release.
func publishChannels(gh *fakegithub.Server) {
	draft := prerelease(photocraft, "v2.0.0-alpha.1", 3)
	draft.Draft, draft.PublishedAt = true, nil
	gh.SetList(photocraft, draft, prerelease(photocraft, "v1.1.0-beta.1", 1), fakegithub.NewRelease(photocraft, "v1.0.0"))
	gh.SetList(vectorcraft, fakegithub.NewRelease(vectorcraft, "v2.0.0"), prerelease(vectorcraft, "v2.0.0-rc.1", -1))
}

// channels returns, for each app of p's answer, the tag of its
// latest_prerelease: "" for null, and no entry for an app without the key.
func channels(t testing.TB, p *proc) map[string]string {
	t.Helper()
	var info struct {
		ReleaseInfo struct {
			Apps map[string]map[string]json.RawMessage `json:"apps"`
		} `json:"release_info"`
	}
	if err := json.Unmarshal(p.get(t).body, &info); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for app, fields := range info.ReleaseInfo.Apps {
		raw, ok := fields["latest_prerelease"]
		if !ok {
			continue
		}
		var r *struct {
			Tag        string `json:"tag"`
			Prerelease bool   `json:"prerelease"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("%s's latest_prerelease %s: %v", app, raw, err)
		}
		out[app] = ""
		if r != nil {
			out[app] = r.Tag
			if !r.Prerelease {
				t.Errorf("%s's latest_prerelease %s is not marked prerelease", app, r.Tag)
			}
		}
	}
	return out
}

// waitChannels waits until every pod serves want as its pre-releases.
func waitChannels(t testing.TB, want map[string]string, pods ...*proc) {
	t.Helper()
	for _, p := range pods {
		testkit.Eventually(t, fmt.Sprintf("%s serves the pre-releases %v", p.name, want), func() bool {
			return fmt.Sprint(channels(t, p)) == fmt.Sprint(want)
		})
	}
}

// channelFleet is a poller and an API pod on one Redis with prereleaseApps
// on the channel, against a fake GitHub serving publishFirst and
// publishChannels with a quota that one request a second for each entry
// leaves unpaced.
type channelFleet struct {
	gh          *fakegithub.Server
	rs          *redistest.Server
	poller, pod *proc
	want        map[string]string // the tags served
}

// startChannelFleet starts a channelFleet, the poller's and the pod's
// environments with the extra variables.
func startChannelFleet(t testing.TB, pollerExtra, podExtra map[string]string) *channelFleet {
	t.Helper()
	f := &channelFleet{gh: fakegithub.New(t), rs: redistest.Start(t)}
	f.gh.SetQuota(fakegithub.Quota{Limit: 1 << 20, Remaining: 1 << 20, Reset: time.Now().Add(time.Hour)})
	f.want = publishFirst(f.gh)
	publishChannels(f.gh)
	env := pollerEnv(f.gh, f.rs.URL(), testAppsEnv)
	maps.Copy(env, pollerExtra)
	env["CRAFT_APPS_RELEASE_PRERELEASE_APPS"] = prereleaseApps
	f.poller = startPollers(t, 1, env)[0]
	env = podEnv(f.rs.URL(), testAppsEnv)
	maps.Copy(env, podExtra)
	env["CRAFT_APPS_RELEASE_PRERELEASE_APPS"] = prereleaseApps
	f.pod = startPods(t, 1, env)[0]
	return f
}

// TestPrereleaseChannel runs the channel through a poller, Redis and an API
// pod, and a standalone API: the list's cases, its own ETag revalidated
// with 304s, a rate limit on the list, Redis flushed while GitHub is down,
// and a release newer than every pre-release.
func TestPrereleaseChannel(t *testing.T) {
	t.Parallel()
	f := startChannelFleet(t, nil, nil)
	gh, rs, poller, pod, want := f.gh, f.rs, f.poller, f.pod, f.want
	solo := start(t, "api-standalone", binary(t, "api"), map[string]string{
		"CRAFT_APPS_RELEASE_APPS": testAppsEnv, "CRAFT_APPS_RELEASE_PRERELEASE_APPS": prereleaseApps,
		"CRAFT_APPS_RELEASE_GITHUB_API_URL": gh.URL(), "CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "1",
		"CRAFT_APPS_RELEASE_TICK_SECS": "1", "CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS": "0",
		"CRAFT_APPS_RELEASE_REQUEST_SPACING_MS": "0", "SHUTDOWN_TIMEOUT_SECS": "5",
	})

	// The draft is skipped, vectorcraft's pre-release is older than its
	// release, filmcraft has no channel and so no key.
	waitTags(t, want, pod, solo)
	pre := map[string]string{"photocraft": "v1.1.0-beta.1", "vectorcraft": ""}
	waitChannels(t, pre, pod, solo)
	app, err := ask(pod.base + infoPath + "/photocraft")
	if err != nil || app.status != http.StatusOK || !strings.Contains(string(app.body), `"latest_prerelease":{"tag":"v1.1.0-beta.1"`) {
		t.Errorf("photocraft's own answer: %d %.300s (%v), want its pre-release", app.status, app.body, err)
	}

	// The list is revalidated with its own ETag and answered 304.
	list := fakegithub.List(photocraft)
	testkit.Eventually(t, "the list revalidated twice", func() bool {
		n := 0
		for _, r := range gh.Requests() {
			if r.Repo == list && r.IfNoneMatch == gh.ETag(list) && r.IfNoneMatch != gh.ETag(photocraft) {
				n++
			}
		}
		return n >= 2
	})

	// A rate limit on the list is the fleet's: logged, the pre-release kept,
	// and polling goes on after the reset.
	gh.Queue(list, fakegithub.RateLimit(time.Now().Add(2*time.Second)), fakegithub.RateLimit(time.Now().Add(2*time.Second)))
	testkit.Eventually(t, "the rate limit logged for the list", func() bool {
		for line := range strings.Lines(poller.logs.String() + solo.logs.String()) {
			if strings.Contains(line, `"msg":"github rate limit"`) && strings.Contains(line, `"app":"photocraft:prerelease"`) {
				return true
			}
		}
		return false
	})
	waitChannels(t, pre, pod, solo)
	gh.SetList(photocraft, prerelease(photocraft, "v1.1.0-beta.2", 2), prerelease(photocraft, "v1.1.0-beta.1", 1))
	pre["photocraft"] = "v1.1.0-beta.2"
	waitChannels(t, pre, pod, solo)

	// Redis flushed while GitHub fails: the poller writes the lists back
	// from memory, and the pod keeps serving them.
	gh.Stick(fakegithub.AnyRepo, fakegithub.ServerError())
	redisDo(t, rs, "FLUSHALL")
	o, err := redis.Parse(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.Open(o)
	t.Cleanup(c.Close)
	st := store.New(c, "e2e", release.Entries([]release.App{{Key: "photocraft", Name: "PhotoCraft", Repo: photocraft, Prereleases: true}}))
	testkit.Eventually(t, "photocraft's pre-release entry written back", func() bool {
		e, _, err := st.LoadApp(context.Background(), "photocraft:prerelease")
		return err == nil && e.Release != nil && e.Release.Tag == "v1.1.0-beta.2"
	})
	waitChannels(t, pre, pod)
	gh.Unstick(fakegithub.AnyRepo)

	// A release newer than every pre-release hides them.
	stable := fakegithub.NewRelease(photocraft, "v1.2.0")
	at := stable.PublishedAt.Add(3 * time.Hour)
	stable.PublishedAt = &at
	gh.Publish(photocraft, stable)
	want["photocraft"], pre["photocraft"] = "v1.2.0", ""
	waitTags(t, want, pod, solo)
	waitChannels(t, pre, pod, solo)
}

// prereleaseEvent is the body of a release event of action for repo's tag
// published as a prerelease.
func prereleaseEvent(action, repo, tag string) []byte {
	return fmt.Appendf(nil, `{"action":%q,"release":%s,"repository":{"full_name":%q}}`, action, prerelease(repo, tag, 1).JSON(), repo)
}

// TestPrereleaseWebhook: with pollers that would not ask on their own, a
// prereleased delivery makes them ask for the list alone, and a released
// one for the release and the list.
func TestPrereleaseWebhook(t *testing.T) {
	t.Parallel()
	f := startChannelFleet(t, map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "600"},
		map[string]string{"CRAFT_APPS_RELEASE_WEBHOOK_SECRET": webhookSecret})
	gh, pod, want := f.gh, f.pod, f.want
	waitTags(t, want, pod)
	pre := map[string]string{"photocraft": "v1.1.0-beta.1", "vectorcraft": ""}
	waitChannels(t, pre, pod)
	gh.Reset()

	gh.SetList(photocraft, prerelease(photocraft, "v1.1.0-beta.2", 2), prerelease(photocraft, "v1.1.0-beta.1", 1))
	deliver(t, pod, "release", newDeliveryID(), prereleaseEvent("prereleased", photocraft, "v1.1.0-beta.2"), http.StatusAccepted, `"apps":["photocraft"]`)
	pre["photocraft"] = "v1.1.0-beta.2"
	waitChannels(t, pre, pod)
	if n := gh.Count(photocraft); n != 0 {
		t.Errorf("%d requests for photocraft's release after a prereleased delivery, want none", n)
	}

	gh.Publish(vectorcraft, fakegithub.NewRelease(vectorcraft, "v2.1.0"))
	deliver(t, pod, "release", newDeliveryID(), releaseEvent("released", vectorcraft, "v2.1.0"), http.StatusAccepted, `"apps":["vectorcraft"]`)
	want["vectorcraft"] = "v2.1.0"
	waitTags(t, want, pod)
	testkit.Eventually(t, "vectorcraft's list asked too", func() bool { return gh.Count(fakegithub.List(vectorcraft)) > 0 })
}
