package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/webhook"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/testkit"
)

const secret = "s3cret"

var testApps = []release.App{
	{Key: "photocraft", Name: "PhotoCraft", Repo: "storytold/photocraft"},
	{Key: "vectorcraft", Name: "VectorCraft", Repo: "storytold/vectorcraft"},
}

// fakeFleet records what it is asked, and fails with err when set.
type fakeFleet struct {
	mu    sync.Mutex
	err   error
	seen  map[string]bool
	calls []string // "delivery-id app tag"
}

func (f *fakeFleet) Deliver(_ context.Context, ids []string, refreshes map[string]release.Refresh) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return false, f.err
	}
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	for _, id := range ids {
		if f.seen[id] {
			return false, nil
		}
	}
	for _, id := range ids {
		f.seen[id] = true
	}
	for _, a := range slices.Sorted(maps.Keys(refreshes)) {
		f.calls = append(f.calls, ids[len(ids)-1]+" "+a+" "+refreshes[a].Tag)
	}
	return true, nil
}

// deliver hands l a delivery of ids that refreshes photocraft and
// vectorcraft to v1 at now, and reports whether it was new.
func deliver(t *testing.T, l *webhook.Local, now time.Time, ids ...string) bool {
	t.Helper()
	r := release.Refresh{At: now, Tag: "v1"}
	first, err := l.Deliver(context.Background(), ids, map[string]release.Refresh{"photocraft": r, "vectorcraft": r})
	if err != nil {
		t.Fatal(err)
	}
	return first
}

// countObserver counts deliveries by "event outcome".
type countObserver struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *countObserver) Delivery(event, outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = map[string]int{}
	}
	o.n[event+" "+outcome]++
}

const publishedBody = `{"action":"published","release":{"tag_name":"v1.2.0","draft":false,"prerelease":false,"published_at":"2026-10-10T12:00:00Z"},"repository":{"full_name":"StoryTold/PhotoCraft"}}`

func delivery(event, id, body, signature string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/v1/craft_apps/github_webhook", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range map[string]string{webhook.EventHeader: event, webhook.DeliveryHeader: id, webhook.SignatureHeader: signature} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	return req
}

// newHandler is webhook.New for testApps with the secrets "old" and secret.
func newHandler(t *testing.T, fleet webhook.Recorder, obs webhook.Observer) http.Handler {
	t.Helper()
	h, err := webhook.New(webhook.Config{Secrets: []string{"old", secret}, Apps: testApps, Recorder: fleet, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHandler(t *testing.T) {
	signed := func(body string) string { return webhook.Sign(secret, []byte(body)) }
	sd := func(event, id, body string) *http.Request { return delivery(event, id, body, signed(body)) }
	chunked := func(r *http.Request) *http.Request { r.ContentLength = -1; return r }
	refused := errors.New("dial tcp: refused")
	largest := largestRelease()
	big := `{"repository":{"full_name":"storytold/photocraft"},"pad":"` + strings.Repeat("a", webhook.MaxBody) + `"}`
	exact := `{"action":"edited","repository":{"full_name":"storytold/photocraft"},"pad":"`
	exact += strings.Repeat("a", webhook.MaxBody-len(exact)-2) + `"}`
	tests := []struct {
		name       string
		req        *http.Request
		fleetErr   error
		wantStatus int
		wantBody   string
		wantCalls  []string
		wantCount  string
	}{
		{"ping", sd("ping", "p1", `{"zen":"Speak like a human."}`), nil, 200, `"pong"`, nil, "ping accepted"},
		{"release published", sd("release", "d1", publishedBody), nil, 202, `"accepted"`, []string{"d1 photocraft v1.2.0"}, "release accepted"},
		{"release of exactly MaxBody", sd("release", "d2", exact), nil, 202, `"accepted"`, []string{"d2 photocraft "}, "release accepted"},
		// GitHub's longest notes (125,000 characters of three bytes) and 60 assets, read as a chunked body is.
		{"the largest release GitHub makes", chunked(sd("release", "d14", largest)), nil, 202, `"accepted"`, []string{"d14 photocraft v1.2.0"}, "release accepted"},
		{"release from a repository not served", sd("release", "d3", `{"action":"published","repository":{"full_name":"storytold/filmcraft"}}`), nil, 202, `"ignored"`, nil, "release ignored"},
		{"another event", sd("push", "d4", `{"repository":{"full_name":"storytold/photocraft"}}`), nil, 202, `"ignored"`, nil, "other ignored"},
		{"no signature", delivery("release", "d5", publishedBody, ""), nil, 401, `"bad signature"`, nil, "release bad_signature"},
		{"bad signature on a ping", delivery("ping", "d8", `{}`, "sha256=00"), nil, 401, `"bad signature"`, nil, "ping bad_signature"},
		{"over MaxBody, signed", sd("release", "d9", big), nil, 413, `"body too large"`, nil, "release too_large"},
		{"over MaxBody, unsigned", delivery("release", "d10", big, ""), nil, 413, `"body too large"`, nil, "release too_large"},
		{"over MaxBody, chunked", chunked(sd("release", "d13", big)), nil, 413, `"body too large"`, nil, "release too_large"},
		{"signed, no delivery id", sd("release", "", publishedBody), nil, 400, `X-GitHub-Delivery`, nil, "release invalid"},
		{"signed, a delivery id with a newline", sd("release", "a\x01b", publishedBody), nil, 400, `X-GitHub-Delivery`, nil, "release invalid"},
		{"signed, not JSON", sd("release", "d11", "payload=%7B%7D"), nil, 400, `application/json`, nil, "release invalid"},
		{"redis down", sd("release", "d12", publishedBody), refused, 503, `"unavailable, redeliver later"`, nil, "release unavailable"},
		{"ping, redis down", sd("ping", "p2", `{}`), refused, 200, `"pong"`, nil, "ping accepted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fleet, obs, rec := &fakeFleet{err: tt.fleetErr}, &countObserver{}, httptest.NewRecorder()
			newHandler(t, fleet, obs).ServeHTTP(rec, tt.req)
			if rec.Code != tt.wantStatus || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("got %d %s, want %d with %s", rec.Code, rec.Body, tt.wantStatus, tt.wantBody)
			}
			if got := rec.Header().Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type got %q, want application/json", got)
			}
			if strings.Contains(rec.Body.String(), secret) {
				t.Errorf("the answer %s quotes the secret", rec.Body)
			}
			if strings.Join(fleet.calls, ",") != strings.Join(tt.wantCalls, ",") {
				t.Errorf("fleet calls got %q, want %q", fleet.calls, tt.wantCalls)
			}
			if obs.n[tt.wantCount] != 1 || len(obs.n) != 1 {
				t.Errorf("counted %v, want one %q", obs.n, tt.wantCount)
			}
		})
	}
}

// TestHandlerRedelivery: a delivery refused while Redis is down is new when
// GitHub redelivers it; one recorded is a duplicate after, under its id or
// another.
func TestHandlerRedelivery(t *testing.T) {
	fleet := &fakeFleet{err: errors.New("dial tcp: refused")}
	h := newHandler(t, fleet, nil)
	for i, tt := range []struct {
		id, wantBody string
		wantStatus   int
	}{
		{"same-id", "unavailable", http.StatusServiceUnavailable},
		{"same-id", `"accepted"`, http.StatusAccepted},
		{"same-id", `"duplicate"`, http.StatusAccepted},
		{"same-id", `"duplicate"`, http.StatusAccepted},
		{"another-id", `"duplicate"`, http.StatusAccepted},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, delivery("release", tt.id, publishedBody, webhook.Sign(secret, []byte(publishedBody))))
		if rec.Code != tt.wantStatus || !strings.Contains(rec.Body.String(), tt.wantBody) {
			t.Errorf("delivery %d (%s) got %d %s, want %d %s", i+1, tt.id, rec.Code, rec.Body, tt.wantStatus, tt.wantBody)
		}
		fleet.mu.Lock()
		fleet.err = nil
		fleet.mu.Unlock()
	}
	if len(fleet.calls) != 1 {
		t.Errorf("fleet calls got %q, want one", fleet.calls)
	}
}

func TestNewRefusesNoSecret(t *testing.T) {
	for _, secrets := range [][]string{nil, {""}, {"a", ""}} {
		if _, err := webhook.New(webhook.Config{Secrets: secrets, Recorder: &fakeFleet{}}); err == nil {
			t.Errorf("New with secrets %q: no error", secrets)
		}
	}
}

// TestLocal: a delivery sharing an id with one remembered is a duplicate
// that records nothing, even replayed under a new id each time (its body's
// hash first, as the Handler passes them); one is remembered for
// LocalMemory, and Run's sweep forgets it after.
func TestLocal(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC))
	var got []string
	l := webhook.NewLocal(func(app string, r release.Refresh) { got = append(got, app+" "+r.Tag) }, clock)
	if !deliver(t, l, clock.Now(), "a") || deliver(t, l, clock.Now(), "a") || !deliver(t, l, clock.Now(), "b") {
		t.Fatal("want a new, a again seen, b new")
	}
	if deliver(t, l, clock.Now(), "b", "c") {
		t.Fatal("a delivery sharing one of its ids with b counts as new")
	}
	for i := range 20_000 {
		deliver(t, l, clock.Now(), "b", fmt.Sprintf("id-%d", i))
	}
	if n := l.Len(); n != 2 {
		t.Fatalf("Len = %d after duplicates, want 2: a duplicate records nothing", n)
	}
	clock.Advance(webhook.LocalMemory - time.Second)
	if deliver(t, l, clock.Now(), "a") {
		t.Error("a redelivered just inside the memory counts as new")
	}
	clock.Advance(time.Second)
	if !deliver(t, l, clock.Now(), "a") {
		t.Error("a redelivered after the memory is not new")
	}
	if want := "photocraft v1,vectorcraft v1,photocraft v1,vectorcraft v1,photocraft v1,vectorcraft v1"; strings.Join(got, ",") != want {
		t.Errorf("refreshes got %q, want %q", got, want)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	testkit.Eventually(t, "the sweep waits", func() bool { return clock.Waiters() == 1 })
	clock.Advance(webhook.LocalMemory)
	testkit.Eventually(t, "the sweep forgets what is past LocalMemory", func() bool { return l.Len() == 0 })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

// TestLocalCap: distinct deliveries past LocalCap forget the oldest, never
// the newest.
func TestLocalCap(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC))
	l := webhook.NewLocal(func(string, release.Refresh) {}, clock)
	for i := range webhook.LocalCap {
		deliver(t, l, clock.Now(), fmt.Sprintf("sha256-d%d", i), fmt.Sprintf("d%d", i))
		clock.Advance(time.Second)
	}
	if n := l.Len(); n != webhook.LocalCap {
		t.Fatalf("Len = %d after %d deliveries of two ids, want the cap %d", n, webhook.LocalCap, webhook.LocalCap)
	}
	if last := webhook.LocalCap - 1; deliver(t, l, clock.Now(), fmt.Sprintf("sha256-d%d", last), fmt.Sprintf("d%d", last)) {
		t.Error("the newest delivery was forgotten at the cap")
	}
	if !deliver(t, l, clock.Now(), "sha256-d0", "d0") {
		t.Error("the oldest delivery is still remembered past the cap")
	}
}

// TestReadersBounded: with every reader held by a body that has not ended,
// the next delivery is answered 503 with Retry-After, unread; once one ends,
// deliveries are read again.
func TestReadersBounded(t *testing.T) {
	srv := httptest.NewServer(newHandler(t, &fakeFleet{}, nil))
	defer srv.Close()
	post := func(body io.Reader, signature string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, body)
		req.Header.Set(webhook.EventHeader, "ping")
		req.Header.Set(webhook.SignatureHeader, signature)
		return req
	}
	held := make([]*io.PipeWriter, webhook.Readers)
	answered := make(chan int, webhook.Readers)
	for i := range held {
		pr, pw := io.Pipe()
		held[i] = pw
		req := post(pr, "sha256="+strings.Repeat("0", 64))
		go func() {
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				answered <- 0
				return
			}
			res.Body.Close()
			answered <- res.StatusCode
		}()
		if _, err := pw.Write([]byte(`{"zen":`)); err != nil {
			t.Fatal(err)
		}
	}
	ping := func() *http.Response {
		t.Helper()
		body := `{"zen":"x"}`
		res, err := http.DefaultClient.Do(post(strings.NewReader(body), webhook.Sign(secret, []byte(body))))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	// Until the held bodies have all taken their readers, a ping may get one.
	var busy *http.Response
	testkit.Eventually(t, "a delivery answered 503 with every reader held", func() bool {
		busy = ping()
		return busy.StatusCode == http.StatusServiceUnavailable
	})
	if got := busy.Header.Get("Retry-After"); got != strconv.Itoa(webhook.RetryAfter) {
		t.Errorf("Retry-After %q, want %d", got, webhook.RetryAfter)
	}
	if !busy.Close {
		t.Error("the 503 keeps its connection, want Connection: close: the server must not read the body it refused")
	}
	held[0].Close()
	if code := <-answered; code != http.StatusUnauthorized {
		t.Errorf("the held body, ended: %d, want 401", code)
	}
	if res := ping(); res.StatusCode != http.StatusOK {
		t.Errorf("a delivery once a reader is free: %d, want 200", res.StatusCode)
	}
	for _, pw := range held[1:] {
		pw.Close()
	}
	for range held[1:] {
		<-answered
	}
}

// largestRelease is a release event with the longest notes GitHub accepts
// (125,000 characters, each of three bytes) and 60 assets.
func largestRelease() string {
	var assets []string
	for i := range 60 {
		assets = append(assets, fmt.Sprintf(`{"url":"https://api.github.com/repos/storytold/photocraft/releases/assets/%d","id":%d,"name":"PhotoCraft-1.2.0-build-%02d-x86_64.AppImage","label":"","uploader":{"login":"release-bot","id":1,"node_id":"MDQ6VXNlcjE=","avatar_url":"https://avatars.githubusercontent.com/u/1?v=4","gravatar_id":"","url":"https://api.github.com/users/release-bot","html_url":"https://github.com/release-bot","followers_url":"https://api.github.com/users/release-bot/followers","following_url":"https://api.github.com/users/release-bot/following{/other_user}","gists_url":"https://api.github.com/users/release-bot/gists{/gist_id}","starred_url":"https://api.github.com/users/release-bot/starred{/owner}{/repo}","subscriptions_url":"https://api.github.com/users/release-bot/subscriptions","organizations_url":"https://api.github.com/users/release-bot/orgs","repos_url":"https://api.github.com/users/release-bot/repos","events_url":"https://api.github.com/users/release-bot/events{/privacy}","received_events_url":"https://api.github.com/users/release-bot/received_events","type":"Bot","site_admin":false},"content_type":"application/octet-stream","state":"uploaded","size":123456789,"download_count":0,"created_at":"2026-10-10T12:00:00Z","updated_at":"2026-10-10T12:00:00Z","browser_download_url":"https://github.com/storytold/photocraft/releases/download/v1.2.0/PhotoCraft-1.2.0-build-%02d-x86_64.AppImage"}`, i, i, i, i))
	}
	notes := strings.Repeat("€", 125_000) // three bytes each
	return `{"action":"published","release":{"tag_name":"v1.2.0","draft":false,"prerelease":false,"published_at":"2026-10-10T12:00:00Z","body":"` + notes + `","assets":[` + strings.Join(assets, ",") + `]},"repository":{"full_name":"storytold/photocraft"}}`
}
