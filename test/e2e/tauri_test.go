package e2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
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

// The Tauri app of the feed's tests, with its tags as tauri-action makes
// them, and an app whose signatures are by another key than its own.
const (
	artcraft       = "storytold/artcraft"
	artcraftApp    = "artcraft=ArtCraft=storytold/artcraft"
	tauriApps      = artcraftApp + ", photocraft=PhotoCraft=storytold/photocraft"
	tauriPrefixes  = "artcraft=artcraft-v"
	updatesPath    = "/v1/craft_apps/updates/"
	tauriBundleLen = 64 << 10

	// pollGap tells polls apart at a 1 s interval: a poll's requests follow
	// each other within milliseconds, and an app is not asked again before
	// three quarters of its interval (docs/scheduling.md, "Is an app due?").
	pollGap = 500 * time.Millisecond
)

// artcraftBundles are the updater bundles tauri-action uploads for ArtCraft
// at version v: NSIS, MSI, the universal .app.tar.gz, AppImage, deb, rpm.
func artcraftBundles(v string) []string {
	return []string{
		"ArtCraft_" + v + "_x64-setup.exe",
		"ArtCraft_" + v + "_x64_en-US.msi",
		"ArtCraft_universal.app.tar.gz",
		"ArtCraft_" + v + "_amd64.AppImage",
		"ArtCraft_" + v + "_amd64.deb",
		"ArtCraft-" + v + "-1.x86_64.rpm",
	}
}

// tauriCase is an updater's request (the path after the app's tauri/) and
// the bundle it must get, an index into artcraftBundles.
type tauriCase struct {
	path   string
	bundle int
}

// tauriCases are the requests that get a bundle of artcraftBundles: every
// target, arch and bundle type that has one, the route without a bundle
// type, and the placeholder an updater before plugin 2.10 leaves.
var tauriCases = []tauriCase{
	{"windows/x86_64/nsis", 0},
	{"windows/x86_64/msi", 1},
	{"windows/x86_64/unknown", 0},
	{"windows/x86_64", 0},
	{"windows/x86_64/%7B%7Bbundle_type%7D%7D", 0},
	{"darwin/x86_64/app", 2},
	{"darwin/x86_64/unknown", 2},
	{"darwin/aarch64/app", 2},
	{"darwin/aarch64/unknown", 2},
	{"linux/x86_64/appimage", 3},
	{"linux/x86_64/deb", 4},
	{"linux/x86_64/rpm", 5},
	{"linux/x86_64/unknown", 3},
	{"linux/x86_64", 3},
}

// tauriPlatforms are the keys of latest.json for artcraftBundles, each with
// its bundle.
var tauriPlatforms = map[string]int{
	"windows-x86_64": 0, "windows-x86_64-nsis": 0, "windows-x86_64-msi": 1,
	"darwin-x86_64": 2, "darwin-x86_64-app": 2, "darwin-aarch64": 2, "darwin-aarch64-app": 2,
	"linux-x86_64": 3, "linux-x86_64-appimage": 3, "linux-x86_64-deb": 4, "linux-x86_64-rpm": 5,
}

// minisignKey is a key pair the minisign binary made, without a password.
type minisignKey struct {
	pub, sec string // the files
	pubkey   string // the base64 of the public-key file: tauri.conf.json's pubkey
}

// runMinisign runs the minisign binary with args in dir and returns its
// output and how it ended. A missing binary fails the test.
func runMinisign(t testing.TB, dir string, args ...string) ([]byte, error) {
	t.Helper()
	bin, err := exec.LookPath("minisign")
	if err != nil {
		t.Fatalf("minisign not found (task deps installs it: apt-get install minisign): %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

// mustMinisign is runMinisign failing the test unless minisign exits 0.
func mustMinisign(t testing.TB, dir string, args ...string) {
	t.Helper()
	if out, err := runMinisign(t, dir, args...); err != nil {
		t.Fatalf("minisign %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func newMinisignKey(t testing.TB) minisignKey {
	t.Helper()
	dir := t.TempDir()
	k := minisignKey{pub: filepath.Join(dir, "pub"), sec: filepath.Join(dir, "sec")}
	mustMinisign(t, dir, "-G", "-W", "-p", k.pub, "-s", k.sec)
	b, err := os.ReadFile(k.pub)
	if err != nil {
		t.Fatal(err)
	}
	k.pubkey = base64.StdEncoding.EncodeToString(b)
	return k
}

// signedRelease is a release of updater bundles of random bytes, each
// signed by a key with minisign and published with its .sig.
type signedRelease struct {
	rel   fakegithub.Release
	files map[string]string // bundle name → the file written
	sigs  map[string]string // .sig asset name → its text: the base64 of the minisign signature file
}

// newSignedRelease writes bundles (names) of random bytes, signs each with
// key, and returns repo's release tagged tag with each bundle and its .sig,
// the asset ids from firstID, published hours after the fake's default.
func newSignedRelease(t testing.TB, repo, tag string, hours int, firstID int64, key minisignKey, bundles ...string) signedRelease {
	t.Helper()
	dir := t.TempDir()
	s := signedRelease{rel: fakegithub.NewRelease(repo, tag), files: map[string]string{}, sigs: map[string]string{}}
	at := s.rel.PublishedAt.Add(time.Duration(hours) * time.Hour)
	s.rel.PublishedAt, s.rel.Assets = &at, nil
	id := firstID
	for _, name := range bundles {
		data := make([]byte, tauriBundleLen)
		_, _ = rand.Read(data)
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		mustMinisign(t, dir, "-S", "-s", key.sec, "-m", file, "-x", file+".minisig")
		box, err := os.ReadFile(file + ".minisig")
		if err != nil {
			t.Fatal(err)
		}
		sig := []byte(base64.StdEncoding.EncodeToString(box))
		s.files[name], s.sigs[name+".sig"] = file, string(sig)
		// The bundle's bytes are not served: the service must never ask for them.
		s.rel.Assets = append(s.rel.Assets, tauriAsset(repo, tag, id, name, data, nil), tauriAsset(repo, tag, id+1, name+".sig", sig, sig))
		id += 2
	}
	return s
}

func tauriAsset(repo, tag string, id int64, name string, data, content []byte) fakegithub.Asset {
	sum := sha256.Sum256(data)
	return fakegithub.Asset{
		ID: id, Name: name, ContentType: "application/octet-stream", State: "uploaded",
		Size: int64(len(data)), Digest: "sha256:" + hex.EncodeToString(sum[:]),
		BrowserDownloadURL: release.DownloadURL(repo, tag, name), Content: content,
	}
}

// tauriUpdate is the feed's 200.
type tauriUpdate struct {
	Version   string `json:"version"`
	Notes     string `json:"notes"`
	PubDate   string `json:"pub_date"`
	URL       string `json:"url"`
	Signature string `json:"signature"`
}

// feed GETs path of p, failing the test when the request fails.
func feed(t testing.TB, p *proc, path string) answer {
	t.Helper()
	a, err := ask(p.base + updatesPath + path)
	if err != nil {
		t.Fatalf("%s %s: %v", p.name, path, err)
	}
	return a
}

// serves reports whether p answers every tauriCases request of app with a
// 200 for version.
func serves(t testing.TB, p *proc, app, version string) bool {
	t.Helper()
	for _, c := range tauriCases {
		a := feed(t, p, app+"/tauri/"+c.path+"?current_version=0.0.1")
		var u tauriUpdate
		if a.status != http.StatusOK || json.Unmarshal(a.body, &u) != nil || u.Version != version {
			return false
		}
	}
	return true
}

// checkFeed checks that p answers each of tauriCases about artcraft with
// s's version and the bundle the case must get, and that the signature it
// serves verifies with minisign -V and key against the bytes its url names;
// and latest.json the same for each platform.
func checkFeed(t testing.TB, p *proc, s signedRelease, key minisignKey) {
	t.Helper()
	version := strings.TrimPrefix(s.rel.TagName, "artcraft-v")
	bundles := artcraftBundles(version)
	for _, c := range tauriCases {
		a := feed(t, p, "artcraft/tauri/"+c.path+"?current_version=0.40.9")
		var u tauriUpdate
		if a.status != http.StatusOK || json.Unmarshal(a.body, &u) != nil {
			t.Errorf("%s %s: %d %s, want 200 with an update", p.name, c.path, a.status, a.body)
			continue
		}
		if u.Version != version || u.PubDate != s.rel.PublishedAt.Format(time.RFC3339) || !strings.Contains(u.Notes, "Faster start-up") {
			t.Errorf("%s %s: version %q, pub_date %q, notes %q; want %q, %s and the release's notes",
				p.name, c.path, u.Version, u.PubDate, u.Notes, version, s.rel.PublishedAt.Format(time.RFC3339))
		}
		checkBundle(t, p.name+" "+c.path, s, key, u.URL, u.Signature, bundles[c.bundle])
	}

	a := feed(t, p, "artcraft/tauri/latest.json")
	var m struct {
		Version   string `json:"version"`
		Platforms map[string]struct {
			URL       string `json:"url"`
			Signature string `json:"signature"`
		} `json:"platforms"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &m) != nil {
		t.Fatalf("%s latest.json: %d %s, want 200", p.name, a.status, a.body)
	}
	if got, want := slices.Sorted(maps.Keys(m.Platforms)), slices.Sorted(maps.Keys(tauriPlatforms)); m.Version != version || !slices.Equal(got, want) {
		t.Errorf("%s latest.json: version %q, platforms %v; want %q, %v", p.name, m.Version, got, version, want)
	}
	for key, b := range tauriPlatforms {
		if pl, ok := m.Platforms[key]; ok {
			checkBundle(t, p.name+" latest.json "+key, s, minisignKey{}, pl.URL, pl.Signature, bundles[b])
		}
	}
}

// checkBundle checks that url is the download URL of the bundle want of s
// and signature its .sig as published; with a key, that minisign -V
// verifies the signature against the bytes of the file url names.
func checkBundle(t testing.TB, what string, s signedRelease, key minisignKey, rawURL, signature, want string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	prefix := "https://github.com/" + artcraft + "/releases/download/" + s.rel.TagName + "/"
	if err != nil || !strings.HasPrefix(rawURL, prefix) {
		t.Errorf("%s: url %q, want one under %s", what, rawURL, prefix)
		return
	}
	name := path.Base(u.Path)
	file, ok := s.files[name]
	if name != want || !ok {
		t.Errorf("%s: url names %q, want %q", what, name, want)
		return
	}
	if signature != s.sigs[name+".sig"] {
		t.Errorf("%s: the signature served (%s), want %s.sig as published", what, trustedComment(signature), name)
	}
	if key.pub == "" {
		return
	}
	box, err := base64.StdEncoding.DecodeString(signature)
	if err != nil {
		t.Errorf("%s: the signature served is not base64: %v", what, err)
		return
	}
	sigFile := filepath.Join(t.TempDir(), "served.minisig")
	if err := os.WriteFile(sigFile, box, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runMinisign(t, filepath.Dir(sigFile), "-V", "-p", key.pub, "-m", file, "-x", sigFile); err != nil {
		t.Errorf("%s: minisign -V of %s with the served signature: %v\n%s", what, name, err, out)
	}
}

// trustedComment returns the trusted comment of a .sig's text, which names
// the file signed, to tell signatures apart in a message.
func trustedComment(sig string) string {
	box, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return fmt.Sprintf("not base64: %v", err)
	}
	for line := range strings.Lines(string(box)) {
		if c, ok := strings.CutPrefix(line, "trusted comment: "); ok {
			return strconv.Quote(strings.TrimSpace(c))
		}
	}
	return fmt.Sprintf("no trusted comment in %q", box)
}

// checkNotFound checks that p answers path with the 404 whose error is want.
func checkNotFound(t testing.TB, p *proc, path, want string) {
	t.Helper()
	a := feed(t, p, path)
	var e struct {
		Success *bool  `json:"success"`
		Error   string `json:"error"`
	}
	if a.status != http.StatusNotFound || json.Unmarshal(a.body, &e) != nil || e.Success == nil || *e.Success || e.Error != want {
		t.Errorf("%s %s: %d %s, want 404 with the error %q", p.name, path, a.status, a.body, want)
	}
}

// polls splits the requests gh received about repo (its latest release and
// its assets) into polls: requests less than pollGap apart are one poll's.
func polls(gh *fakegithub.Server, repo string) [][]fakegithub.Request {
	var out [][]fakegithub.Request
	var last time.Time
	for _, r := range gh.Requests() {
		if r.Repo != repo && !strings.HasPrefix(r.Repo, repo+"/releases/") {
			continue
		}
		if len(out) == 0 || r.At.Sub(last) >= pollGap {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], r)
		last = r.At
	}
	return out
}

// assetRequests counts the asset requests among rs.
func assetRequests(rs []fakegithub.Request) int {
	n := 0
	for _, r := range rs {
		if strings.Contains(r.Repo, "/releases/assets/") {
			n++
		}
	}
	return n
}

// checkPolls checks gh's requests about repo: after the polls before
// `from`, a poll of one request for the release and one per .sig (sigs of
// them, each asked once), then at least `later` polls of one conditional
// request each. It returns the figures for the log.
func checkPolls(t testing.TB, gh *fakegithub.Server, repo string, from, sigs, later int) string {
	t.Helper()
	var ps [][]fakegithub.Request
	testkit.Eventually(t, fmt.Sprintf("%d polls of %s after its first fetch", later, repo), func() bool {
		ps = polls(gh, repo)
		return len(ps) > from+later
	})
	first := ps[from]
	if len(first) != 1+sigs || assetRequests(first) != sigs || first[0].Repo != repo {
		t.Errorf("%s's first fetch: %d requests, %d for assets, want the release then %d .sig", repo, len(first), assetRequests(first), sigs)
	}
	seen := map[string]bool{}
	for _, r := range first[1:] {
		if seen[r.Repo] || r.Accept != "application/octet-stream" {
			t.Errorf("%s: %s asked again, or with Accept %q", repo, r.Path, r.Accept)
		}
		seen[r.Repo] = true
	}
	sizes := make([]int, 0, len(ps)-from-1)
	for _, p := range ps[from+1:] {
		sizes = append(sizes, len(p))
		if len(p) != 1 || p[0].Repo != repo || p[0].IfNoneMatch == "" {
			t.Errorf("%s: a later poll asked %d times (%s, If-None-Match %q), want one conditional request for the release", repo, len(p), p[0].Path, p[0].IfNoneMatch)
		}
	}
	return fmt.Sprintf("first fetch %d requests, each later poll %v", len(first), sizes)
}

// tauriEnv adds the tag prefix and the public keys to env.
func tauriEnv(env map[string]string, pubkeys string) map[string]string {
	env["CRAFT_APPS_RELEASE_TAG_PREFIXES"] = tauriPrefixes
	env["CRAFT_APPS_RELEASE_TAURI_PUBKEYS"] = pubkeys
	return env
}

// newTauriGitHub returns a fake GitHub whose quota leaves one request a
// second for each app unpaced.
func newTauriGitHub(t testing.TB) *fakegithub.Server {
	gh := fakegithub.New(t)
	gh.SetQuota(fakegithub.Quota{Limit: 1 << 20, Remaining: 1 << 20, Reset: time.Now().Add(time.Hour)})
	return gh
}

// TestTauriStandalone runs the one-command default, cmd/api polling the fake
// GitHub itself: every request of an updater gets its bundle with a
// signature that minisign verifies against the bundle's bytes, the .sig
// files are asked once, a signature by another key is never offered, and a
// new release replaces the old one without a 404 between.
func TestTauriStandalone(t *testing.T) {
	t.Parallel()
	key, other := newMinisignKey(t), newMinisignKey(t)
	gh := newTauriGitHub(t)
	v41 := newSignedRelease(t, artcraft, "artcraft-v0.41.0", 0, 5000, key, artcraftBundles("0.41.0")...)
	gh.Publish(artcraft, v41.rel)
	forged := newSignedRelease(t, photocraft, "v1.2.0", 0, 7000, other, "PhotoCraft_1.2.0_x64-setup.exe", "PhotoCraft_1.2.0_amd64.AppImage")
	gh.Publish(photocraft, forged.rel)

	env := tauriEnv(standaloneEnv(gh, tauriApps), "artcraft="+key.pubkey+", photocraft="+key.pubkey)
	env["CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS"], env["CRAFT_APPS_RELEASE_TICK_SECS"] = "1", "1"
	bin := binary(t, "api")
	began := time.Now()
	api := start(t, "api-standalone", bin, env)
	testkit.Eventually(t, "the feed serves artcraft 0.41.0", func() bool { return serves(t, api, "artcraft", "0.41.0") })
	t.Logf("the feed served every bundle of artcraft-v0.41.0 %v after the process started", time.Since(began).Round(time.Millisecond))

	checkFeed(t, api, v41, key)
	const nsis = "artcraft/tauri/windows/x86_64/nsis"
	if a := feed(t, api, nsis+"?current_version=0.41.0"); a.status != http.StatusNoContent || len(a.body) != 0 {
		t.Errorf("current_version=0.41.0: %d %q, want 204 without a body", a.status, a.body)
	}
	checkNotFound(t, api, "artcraft/tauri/linux/aarch64/deb?current_version=0.40.9",
		"artcraft artcraft-v0.41.0 has no signed updater bundle for linux aarch64 deb")
	t.Logf("artcraft: %s", checkPolls(t, gh, artcraft, 0, 6, 3))

	// photocraft's signatures are by another key than its own: refused at the
	// door, asked once, never offered, and its release served all the same.
	metrics := metricsBase(t, api) + "/metrics"
	refused := `craft_poller_companions_total{app="photocraft",outcome="refused"}`
	testkit.Eventually(t, "photocraft's two signatures refused", func() bool { return testkit.Scrape(t, metrics)[refused] >= 2 })
	t.Logf("photocraft (signed by another key): %s", checkPolls(t, gh, photocraft, 0, 2, 1))
	if got := testkit.Scrape(t, metrics)[refused]; got != 2 {
		t.Errorf("%s = %v, want 2: each refused once", refused, got)
	}
	if got := api.logs.count("companion refused"); got != 2 {
		t.Errorf("%d lines \"companion refused\", want 2 (photocraft's)", got)
	}
	checkNotFound(t, api, "photocraft/tauri/windows/x86_64/nsis", "photocraft v1.2.0 has no signed updater bundle for windows x86_64 nsis")
	checkNotFound(t, api, "photocraft/tauri/linux/x86_64", "photocraft v1.2.0 has no signed updater bundle for linux x86_64 unknown")
	checkNotFound(t, api, "photocraft/tauri/latest.json", "photocraft v1.2.0 has no signed updater bundle")
	if got := tags(api.served(t)); got["photocraft"] != "v1.2.0" || got["artcraft"] != "artcraft-v0.41.0" {
		t.Errorf("release_info serves %v, want photocraft v1.2.0 and artcraft artcraft-v0.41.0", got)
	}
	if got := testkit.Scrape(t, metrics)[`craft_poller_companions_total{app="artcraft",outcome="stored"}`]; got != 6 {
		t.Errorf("artcraft's companions stored: %v, want 6", got)
	}

	// A new release: the feed offers 0.41.0 until 0.41.1's signatures are
	// there, never a 404.
	v411 := newSignedRelease(t, artcraft, "artcraft-v0.41.1", 1, 6000, key, artcraftBundles("0.41.1")...)
	from := len(polls(gh, artcraft))
	gh.Publish(artcraft, v411.rel)
	published := time.Now()
	testkit.Eventually(t, "the feed serves artcraft 0.41.1", func() bool {
		for _, c := range tauriCases {
			a := feed(t, api, "artcraft/tauri/"+c.path)
			var u tauriUpdate
			if a.status != http.StatusOK || json.Unmarshal(a.body, &u) != nil || (u.Version != "0.41.0" && u.Version != "0.41.1") {
				t.Fatalf("%s while 0.41.1 was fetched: %d %s, want 0.41.0 or 0.41.1", c.path, a.status, a.body)
			}
		}
		return serves(t, api, "artcraft", "0.41.1")
	})
	t.Logf("the feed served every bundle of artcraft-v0.41.1 %v after its publication on the fake GitHub", time.Since(published).Round(time.Millisecond))
	checkFeed(t, api, v411, key)
	if a := feed(t, api, nsis+"?current_version=0.41.1"); a.status != http.StatusNoContent {
		t.Errorf("current_version=0.41.1: %d %s, want 204", a.status, a.body)
	}
	if a := feed(t, api, nsis+"?current_version=0.41.0"); a.status != http.StatusOK {
		t.Errorf("current_version=0.41.0 after 0.41.1: %d %s, want 200", a.status, a.body)
	}
	t.Logf("artcraft-v0.41.1: %s", checkPolls(t, gh, artcraft, from, 6, 2))
}

// TestTauriSplit runs the feed through a poller, Redis and API pods: a pod
// started after the signatures were fetched serves them at once from Redis,
// and after a flush the poller writes them back from memory without asking
// GitHub for them again, while the pods keep serving.
func TestTauriSplit(t *testing.T) {
	t.Parallel()
	key := newMinisignKey(t)
	gh := newTauriGitHub(t)
	v41 := newSignedRelease(t, artcraft, "artcraft-v0.41.0", 0, 5000, key, artcraftBundles("0.41.0")...)
	gh.Publish(artcraft, v41.rel)
	rs := redistest.Start(t)
	pubkeys := "artcraft=" + key.pubkey

	binary(t, "poller") // built before the clock starts
	began := time.Now()
	startPollers(t, 1, tauriEnv(pollerEnv(gh, rs.URL(), artcraftApp), pubkeys))
	env := tauriEnv(podEnv(rs.URL(), artcraftApp), pubkeys)
	first := startPods(t, 1, env)[0]
	testkit.Eventually(t, "api-1 serves artcraft 0.41.0", func() bool { return serves(t, first, "artcraft", "0.41.0") })
	t.Logf("api-1 served every bundle of artcraft-v0.41.0 %v after the poller started", time.Since(began).Round(time.Millisecond))
	checkFeed(t, first, v41, key)
	t.Logf("artcraft through the poller: %s", checkPolls(t, gh, artcraft, 0, 6, 1))
	asked := assetRequests(gh.Requests())

	// A pod started now hydrates the signatures from Redis: it serves them
	// as soon as it is ready, and nobody asks GitHub for them again.
	second := start(t, "api-2", binary(t, "api"), env)
	testkit.Eventually(t, "api-2 is ready", func() bool { return second.status("/readyz") == http.StatusOK })
	checkFeed(t, second, v41, key)
	if got := assetRequests(gh.Requests()); got != asked {
		t.Errorf("%d asset requests after api-2 started, want %d as before", got, asked)
	}

	// Flushed, Redis gets the signatures back from the poller's memory;
	// the pods serve them throughout.
	o, err := redis.Parse(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.Open(o)
	t.Cleanup(c.Close)
	st := store.New(c, "e2e", []release.App{{Key: "artcraft", Name: "ArtCraft", Repo: artcraft, TagPrefix: "artcraft-v"}})
	redisDo(t, rs, "FLUSHALL")
	flushed := time.Now()
	testkit.Eventually(t, "artcraft's signatures written back to Redis", func() bool {
		for _, p := range []*proc{first, second} {
			if !serves(t, p, "artcraft", "0.41.0") {
				t.Fatalf("%s stopped serving artcraft 0.41.0 after the flush", p.name)
			}
		}
		e, _, err := st.LoadApp(context.Background(), "artcraft")
		return err == nil && e.Release != nil && maps.Equal(e.Companions.Map(), v41.sigs)
	})
	t.Logf("the signatures were back in Redis %v after FLUSHALL", time.Since(flushed).Round(time.Millisecond))
	checkFeed(t, second, v41, key)
	if got := assetRequests(gh.Requests()); got != asked {
		t.Errorf("%d asset requests after the flush, want %d as before", got, asked)
	}
}
