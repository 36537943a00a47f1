package e2e

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/fakeredis"
	"github.com/storytold/craft-releases/test/openapitest"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestOpenAPI asks the running binaries, on each of their ports, every
// operation that the API's own /openapi.json documents for that port, with
// and without gzip, revalidating where the endpoint allows it, in the states
// that give every documented status: a pod and a poller not ready yet (a
// silent Redis, on which the webhook's deliveries are not recorded), then a
// warm split deployment with pre-release channels, both with the webhook's
// secret.
// Every answer must be what the document says, and every documented status
// must have been seen.
func TestOpenAPI(t *testing.T) {
	t.Parallel()
	silent := fakeredis.StartSilent(t)
	cold := deployment{gh: fakegithub.New(t), url: silent.URL(), apps: testAppsEnv, podEnv: map[string]string{"CRAFT_APPS_HYDRATE_TIMEOUT_SECS": "600",
		"CRAFT_APPS_RELEASE_WEBHOOK_SECRET": openapitest.WebhookSecret}} // whose deliveries cannot be recorded on a silent Redis: 503
	coldPod := cold.pods(t, 1)[0]

	served, err := ask(coldPod.base + "/openapi.json")
	if err != nil || served.status != http.StatusOK || served.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json: %d %s, %v; want 200 application/json", served.status, served.header.Get("Content-Type"), err)
	}
	doc := openapitest.Load(t, served.body)
	seen := map[string]bool{} // "port METHOD path status" answered

	// A poller's start-up load from a silent Redis takes its Redis timeout
	// (5 s): until then it is not ready.
	coldPoller := cold.pollers(t, 1)[0]
	askAll(t, doc, seen, "poller", coldPoller.name, coldPoller.base)
	askAll(t, doc, seen, "api", coldPod.name, coldPod.base)
	askAll(t, doc, seen, "api-metrics", coldPod.name, coldPod.metrics)

	// The warm deployment has pre-release channels: one pre-release
	// served, one null, one app without the key.
	gh := fakegithub.New(t)
	want := publishFirst(gh)
	// photocraft's release has a Tauri NSIS installer for Windows x86_64 and
	// its .sig, and openapitest's UpdaterFiles, each companion served by the
	// asset endpoint with its digest.
	r := fakegithub.NewRelease(photocraft, "v1.0.0")
	r.Assets = append(r.Assets, tauriAsset(photocraft, r.TagName, 5000, "photocraft_1.0.0_x64-setup.exe", make([]byte, 1<<20), nil),
		tauriAsset(photocraft, r.TagName, 5001, "photocraft_1.0.0_x64-setup.exe.sig", []byte(signedBundleSig), []byte(signedBundleSig)))
	for i, name := range slices.Sorted(maps.Keys(openapitest.UpdaterFiles)) {
		body := []byte(openapitest.UpdaterFiles[name])
		r.Assets = append(r.Assets, tauriAsset(photocraft, r.TagName, int64(6000+i), name, body, body))
	}
	gh.Publish(photocraft, r)
	// photocraft's list has a draft first, then a pre-release newer than its
	// release; vectorcraft's only a pre-release older than its release.
	draft := prerelease(photocraft, "v2.0.0-alpha.1", 3)
	draft.Draft, draft.PublishedAt = true, nil
	gh.SetList(photocraft, draft, prerelease(photocraft, "v1.1.0-beta.1", 1), fakegithub.NewRelease(photocraft, "v1.0.0"))
	gh.SetList(vectorcraft, fakegithub.NewRelease(vectorcraft, "v2.0.0"), prerelease(vectorcraft, "v2.0.0-rc.1", -1))
	rs := redistest.Start(t)
	d := deployment{gh: gh, url: rs.URL(), apps: testAppsEnv, pollerEnv: map[string]string{"CRAFT_APPS_RELEASE_PRERELEASE_APPS": prereleaseApps},
		podEnv: map[string]string{"CRAFT_APPS_RELEASE_PRERELEASE_APPS": prereleaseApps, "CRAFT_APPS_RELEASE_WEBHOOK_SECRET": "an-old-secret," + openapitest.WebhookSecret}}
	poller, pod := d.pollers(t, 1)[0], d.pods(t, 1)[0]
	waitTags(t, want, pod)
	testkit.Eventually(t, "the pod serves the pre-releases", func() bool {
		return maps.Equal(channels(t, pod), map[string]string{"photocraft": "v1.1.0-beta.1", "vectorcraft": ""})
	})
	testkit.Eventually(t, "the feeds serve photocraft's signed bundle and updater files", func() bool {
		for _, path := range []string{"tauri/windows/x86_64/nsis", "squirrel-win/RELEASES", "squirrel-win/arm64/RELEASES",
			"electron/latest.yml", "velopack/releases.linux.json"} {
			if pod.status("/v1/craft_apps/updates/photocraft/"+path) != http.StatusOK {
				return false
			}
		}
		return true
	})
	testkit.Eventually(t, "the pod is ready", func() bool { return pod.status("/readyz") == http.StatusOK })
	testkit.Eventually(t, "the poller is ready", func() bool { return poller.status("/readyz") == http.StatusOK })
	askAll(t, doc, seen, "poller", poller.name, poller.base)
	// With the poller stopped the pod's answer holds still, so an ETag is
	// still current when it is sent back.
	poller.stop(t)
	testkit.Eventually(t, "the pod's answer holds still", func() bool {
		a, b := pod.get(t), pod.get(t)
		return a.header.Get("ETag") == b.header.Get("ETag")
	})
	askAll(t, doc, seen, "api", pod.name, pod.base)
	askAll(t, doc, seen, "api-metrics", pod.name, pod.metrics)

	for _, port := range []string{"api", "api-metrics", "poller"} {
		for _, op := range doc.Operations(t, port) {
			for _, code := range doc.Statuses(t, op) {
				if !seen[port+" "+op+" "+code] {
					t.Errorf("%s %s: documented status %s never answered by the running binary", port, op, code)
				}
			}
		}
	}
}

// askAll sends every operation that doc documents for port to base (the
// process called name), with and without gzip, and for an answer with an
// ETag once more with If-None-Match, checks each answer against doc and
// records its status in seen.
func askAll(t *testing.T, doc *openapitest.Doc, seen map[string]bool, port, name, base string) {
	t.Helper()
	ask := func(op string, r openapitest.Request, acceptEncoding, ifNoneMatch string) *http.Response {
		method, _, _ := strings.Cut(op, " ")
		req := openapitest.NewRequest(t, method, base, r)
		for k, v := range map[string]string{"Accept-Encoding": acceptEncoding, "If-None-Match": ifNoneMatch} {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		res, err := testkit.Client.Do(req) // the answer as sent: no Accept-Encoding added, no redirect followed
		if err != nil {
			t.Fatalf("%s: %s %s: %v", name, method, r.Target, err)
		}
		doc.Check(t, req, res)
		seen[port+" "+op+" "+strconv.Itoa(res.StatusCode)] = true
		return res
	}
	for _, op := range doc.Operations(t, port) {
		for _, r := range openapitest.Requests(t, op) {
			for _, enc := range []string{"", "gzip"} {
				res := ask(op, r, enc, "")
				if etag := res.Header.Get("ETag"); etag != "" {
					if got := ask(op, r, enc, etag); got.StatusCode != http.StatusNotModified {
						t.Errorf("%s: %s %s with If-None-Match %s: %d, want 304", name, op, r.Target, etag, got.StatusCode)
					}
				}
			}
		}
	}
}

// signedBundleSig is a Tauri .sig: the base64 of a signature the real
// minisign made. No public key is configured where it is served, so it is
// checked as a minisign signature only.
const signedBundleSig = "dW50cnVzdGVkIGNvbW1lbnQ6IHNpZ25hdHVyZSBmcm9tIG1pbmlzaWduIHNlY3JldCBrZXkKUlVSTzJvWmlkWHR6UDVPVVMzQUE2RmlxUkZGQW10RERrVHVYYVpSQkR0QnhUcytHVUlaL21jZStXRVlzeHpiWmp1aDRueEJ4U2dMUXk0U0lTQzd4ZUZIOWRNVGY3TUxlSkFjPQp0cnVzdGVkIGNvbW1lbnQ6IHRpbWVzdGFtcDoxNzk2NTQ0OTcyCWZpbGU6ZgloYXNoZWQKUi9NamlpcnNHWlgvQUhrODVWYnQxZTIvdThwQmRmZkRsOU1Rek5saGFFU1hJMkNSTnVHa01PTFdsWmpJSlg2b3U2ZHhzaTlCc3BSQjlwbDJRNzlRQWc9PQo="

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
