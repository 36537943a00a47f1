package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/webhook"
	"github.com/storytold/craft-releases/test/fakeclock"
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
	calls []string // "id app tag"
}

func (f *fakeFleet) Deliver(_ context.Context, ids []string, apps []string, r release.Refresh) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return false, f.err
	}
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	first := true
	for _, id := range ids {
		first = first && !f.seen[id]
		f.seen[id] = true
	}
	if !first {
		return false, nil
	}
	for _, a := range apps {
		f.calls = append(f.calls, ids[0]+" "+a+" "+r.Tag)
	}
	return true, nil
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
	if event != "" {
		req.Header.Set(webhook.EventHeader, event)
	}
	if id != "" {
		req.Header.Set(webhook.DeliveryHeader, id)
	}
	if signature != "" {
		req.Header.Set(webhook.SignatureHeader, signature)
	}
	return req
}

func TestHandler(t *testing.T) {
	signed := func(body string) string { return webhook.Sign(secret, []byte(body)) }
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
		{"ping", delivery("ping", "p1", `{"zen":"Speak like a human."}`, signed(`{"zen":"Speak like a human."}`)),
			nil, 200, `"pong"`, nil, "ping accepted"},
		{"release published", delivery("release", "d1", publishedBody, signed(publishedBody)),
			nil, 202, `"accepted"`, []string{"d1 photocraft v1.2.0"}, "release accepted"},
		{"release of exactly 1 MiB", delivery("release", "d2", exact, signed(exact)),
			nil, 202, `"accepted"`, []string{"d2 photocraft "}, "release accepted"},
		{"release from a repository not served", delivery("release", "d3", `{"action":"published","repository":{"full_name":"storytold/filmcraft"}}`,
			signed(`{"action":"published","repository":{"full_name":"storytold/filmcraft"}}`)),
			nil, 202, `"ignored"`, nil, "release ignored"},
		{"another event", delivery("push", "d4", `{"repository":{"full_name":"storytold/photocraft"}}`, signed(`{"repository":{"full_name":"storytold/photocraft"}}`)),
			nil, 202, `"ignored"`, nil, "other ignored"},
		{"no signature", delivery("release", "d5", publishedBody, ""), nil, 401, `"bad signature"`, nil, "release bad_signature"},
		{"wrong secret", delivery("release", "d6", publishedBody, webhook.Sign("other", []byte(publishedBody))),
			nil, 401, `"bad signature"`, nil, "release bad_signature"},
		{"body changed by one byte", delivery("release", "d7", strings.Replace(publishedBody, "v1.2.0", "v1.2.1", 1), signed(publishedBody)),
			nil, 401, `"bad signature"`, nil, "release bad_signature"},
		{"bad signature on a ping", delivery("ping", "d8", `{}`, "sha256=00"), nil, 401, `"bad signature"`, nil, "ping bad_signature"},
		{"over 1 MiB, signed", delivery("release", "d9", big, signed(big)), nil, 413, `"body too large"`, nil, "release too_large"},
		{"over 1 MiB, unsigned", delivery("release", "d10", big, ""), nil, 413, `"body too large"`, nil, "release too_large"},
		{"signed, no delivery id", delivery("release", "", publishedBody, signed(publishedBody)), nil, 400, `X-GitHub-Delivery`, nil, "release invalid"},
		{"signed, a delivery id with a newline", delivery("release", "a\x01b", publishedBody, signed(publishedBody)), nil, 400, `X-GitHub-Delivery`, nil, "release invalid"},
		{"signed, not JSON", delivery("release", "d11", "payload=%7B%7D", signed("payload=%7B%7D")), nil, 400, `application/json`, nil, "release invalid"},
		{"redis down", delivery("release", "d12", publishedBody, signed(publishedBody)), errors.New("dial tcp: refused"),
			503, `"unavailable, redeliver later"`, nil, "release unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fleet := &fakeFleet{err: tt.fleetErr}
			obs := &countObserver{}
			h, err := webhook.New(webhook.Config{Secrets: []string{"old", secret}, Apps: testApps, Fleet: fleet, Observer: obs})
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, tt.req)
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

func TestHandlerRedelivery(t *testing.T) {
	fleet := &fakeFleet{}
	h, err := webhook.New(webhook.Config{Secrets: []string{secret}, Apps: testApps, Fleet: fleet})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{`"accepted"`, `"duplicate"`, `"duplicate"`} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, delivery("release", "same-id", publishedBody, webhook.Sign(secret, []byte(publishedBody))))
		if rec.Code != http.StatusAccepted || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("delivery %d got %d %s, want 202 %s", i+1, rec.Code, rec.Body, want)
		}
	}
	// The same signed body under another delivery id: a replay.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, delivery("release", "another-id", publishedBody, webhook.Sign(secret, []byte(publishedBody))))
	if rec.Code != http.StatusAccepted || !strings.Contains(rec.Body.String(), `"duplicate"`) {
		t.Errorf("a replay under another id got %d %s, want 202 duplicate", rec.Code, rec.Body)
	}
	if len(fleet.calls) != 1 {
		t.Errorf("fleet calls got %q, want one", fleet.calls)
	}
}

func TestNewRefusesNoSecret(t *testing.T) {
	for _, secrets := range [][]string{nil, {""}, {"a", ""}} {
		if _, err := webhook.New(webhook.Config{Secrets: secrets, Fleet: &fakeFleet{}}); err == nil {
			t.Errorf("New with secrets %q: no error", secrets)
		}
	}
}

func TestLocal(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC))
	var got []string
	l := webhook.NewLocal(func(app string, r release.Refresh) { got = append(got, app+" "+r.Tag) }, clock)
	deliver := func(id string) bool {
		t.Helper()
		first, err := l.Deliver(context.Background(), []string{id}, []string{"photocraft", "vectorcraft"}, release.Refresh{At: clock.Now(), Tag: "v1"})
		if err != nil {
			t.Fatal(err)
		}
		return first
	}
	if !deliver("a") || deliver("a") || !deliver("b") {
		t.Fatal("want a new, a again seen, b new")
	}
	if first, _ := l.Deliver(context.Background(), []string{"c", "b"}, []string{"photocraft"}, release.Refresh{At: clock.Now()}); first {
		t.Fatal("a delivery sharing one of its ids with b counts as new")
	}
	clock.Advance(webhook.LocalMemory - time.Second)
	if deliver("a") {
		t.Error("a redelivered just inside the memory counts as new")
	}
	clock.Advance(time.Second)
	if !deliver("a") {
		t.Error("a redelivered after the memory is not new")
	}
	if want := "photocraft v1,vectorcraft v1,photocraft v1,vectorcraft v1,photocraft v1,vectorcraft v1"; strings.Join(got, ",") != want {
		t.Errorf("refreshes got %q, want %q", got, want)
	}
}
