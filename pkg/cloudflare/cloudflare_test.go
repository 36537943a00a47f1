package cloudflare_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/cloudflare"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/fakecloudflare"
	"github.com/storytold/craft-releases/test/testkit"
)

const token = "cf-token-s3cret"

// counts is an Observer that counts purge calls and their files by outcome.
type counts struct {
	mu           sync.Mutex
	files, calls map[string]int
}

func (c *counts) Purge(outcome string, files int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files[outcome] += files
	c.calls[outcome]++
}

func (c *counts) Delay(time.Duration) {}

func (c *counts) get(outcome string) (calls, files int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[outcome], c.files[outcome]
}

type rig struct {
	p    *cloudflare.Purger
	api  *fakecloudflare.Server
	obs  *counts
	logs *observer.ObservedLogs
}

// start runs a Purger against a fake API with no delay and a fast rate,
// unless c says otherwise; it stops with the test.
func start(t *testing.T, c cloudflare.Config) *rig {
	t.Helper()
	r := newRig(t, fakecloudflare.Start(t), c)
	r.run(t)
	return r
}

// newRig returns a Purger against api as start sets it up, not yet running.
func newRig(t *testing.T, api *fakecloudflare.Server, c cloudflare.Config) *rig {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	obs := &counts{files: map[string]int{}, calls: map[string]int{}}
	c.APIURL, c.Zone, c.Token, c.PublicURL = api.URL(), "zone-1", token, "https://api.example.com"
	if c.Delay == 0 {
		c.Delay = -1
	}
	if c.Interval == 0 {
		c.Interval = time.Millisecond
	}
	c.Observer, c.Logger = obs, zap.New(core)
	p, err := cloudflare.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{p: p, api: api, obs: obs, logs: logs}
}

// run runs the Purger's Run until the test ends.
func (r *rig) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitCalls waits for the fake to have received n calls, and returns them.
func (r *rig) waitCalls(t *testing.T, n int, within time.Duration) []fakecloudflare.Call {
	t.Helper()
	if !testkit.Within(within, func() bool { return len(r.api.Calls()) >= n }) {
		t.Fatalf("%d purge calls after %v, want %d", len(r.api.Calls()), within, n)
	}
	return r.api.Calls()
}

// paths returns prefix0 … prefix<n-1>.
func paths(prefix string, n int) []string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = prefix + strconv.Itoa(i)
	}
	return ps
}

func TestBatches(t *testing.T) {
	r := start(t, cloudflare.Config{})
	r.p.Purge(paths("/p", 65))
	calls := r.waitCalls(t, 3, 5*time.Second)
	var got []string
	for i, c := range calls {
		if c.Path != "/client/v4/zones/zone-1/purge_cache" || c.Token != token {
			t.Errorf("call %d: path %q, token %q; want /client/v4/zones/zone-1/purge_cache and the token", i, c.Path, c.Token)
		}
		if len(c.Files) > cloudflare.MaxFiles {
			t.Errorf("call %d: %d files, want at most %d", i, len(c.Files), cloudflare.MaxFiles)
		}
		got = append(got, c.Files...)
	}
	if want := paths("https://api.example.com/p", 65); !slices.Equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
	// The Observer hears of a call once its answer is read.
	if !testkit.Within(5*time.Second, func() bool { n, files := r.obs.get(cloudflare.Purged); return n == 3 && files == 65 }) {
		n, files := r.obs.get(cloudflare.Purged)
		t.Errorf("purged %d calls of %d files, want 3 of 65", n, files)
	}
}

// passingClock is a fake clock on which every wait passes at once, and the
// waits asked of it, in order.
func passingClock() (*fakeclock.Clock, func() []time.Duration) {
	c := fakeclock.New(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	c.Skip(-1)
	var mu sync.Mutex
	var waits []time.Duration
	c.OnAfter(func(d time.Duration, _ time.Time) {
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, d)
	})
	return c, func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(waits)
	}
}

// TestRetries: a failed call is retried with backoff (1 s, then 2 s, on the
// fake clock); after Attempts failed calls the batch is dropped and counted,
// no further call is made for it, and the next change is sent again.
func TestRetries(t *testing.T) {
	clk, waits := passingClock()
	r := start(t, cloudflare.Config{Attempts: 3, Clock: clk})
	r.api.Fail(2, "Internal error")
	r.p.Purge([]string{"/"})
	testkit.Eventually(t, "the batch purged", func() bool { n, _ := r.obs.get(cloudflare.Purged); return n == 1 })
	var backoff []time.Duration
	for _, d := range waits() {
		if d >= time.Second {
			backoff = append(backoff, d)
		}
	}
	if want := []time.Duration{time.Second, 2 * time.Second}; !slices.Equal(backoff, want) {
		t.Errorf("waits of a second or more %v, want the backoff %v", backoff, want)
	}
	if n, _ := r.obs.get(cloudflare.Failed); n != 2 {
		t.Errorf("failed calls %d, want 2", n)
	}
	if warns := r.logs.FilterMessage("cloudflare purge failed").Len(); warns != 2 {
		t.Errorf("%d warnings, want 2", warns)
	}

	r.api.Fail(3, "boom")
	r.p.Purge([]string{"/a"})
	testkit.Eventually(t, "the batch dropped", func() bool { _, files := r.obs.get(cloudflare.Dropped); return files == 1 })
	if calls := r.api.Calls(); len(calls) != 3+3 {
		t.Errorf("%d calls, want 6: 3 for the first batch, Attempts for the second", len(calls))
	}
	r.p.Purge([]string{"/b"})
	r.waitCalls(t, 7, 5*time.Second)
}

// TestRate: at most Burst calls in any Burst × Interval.
func TestRate(t *testing.T) {
	r := start(t, cloudflare.Config{Burst: 2, Interval: 300 * time.Millisecond})
	r.p.Purge(paths("/p", 4*cloudflare.MaxFiles))
	calls := r.waitCalls(t, 4, 10*time.Second)
	if gap := calls[2].At.Sub(calls[0].At); gap < 550*time.Millisecond {
		t.Errorf("third call %v after the first, want at least 600 ms (2 calls per 600 ms)", gap)
	}
	if gap := calls[1].At.Sub(calls[0].At); gap > 250*time.Millisecond {
		t.Errorf("second call %v after the first, want the burst at once", gap)
	}
}

// TestPurgeNeverBlocks: queueing returns at once while Cloudflare is slow,
// and a full queue drops and counts instead of growing.
func TestPurgeNeverBlocks(t *testing.T) {
	r := start(t, cloudflare.Config{Burst: 1, Interval: time.Hour})
	r.p.Purge([]string{"/first"}) // takes the one call of the hour
	r.waitCalls(t, 1, 5*time.Second)
	begin := time.Now()
	for i := range 2 * cloudflare.MaxPending {
		r.p.Purge([]string{fmt.Sprintf("/x%d", i)})
	}
	if took := time.Since(begin); took > time.Second {
		t.Errorf("queueing took %v, want no wait", took)
	}
	if _, files := r.obs.get(cloudflare.Dropped); files < cloudflare.MaxPending-cloudflare.MaxFiles {
		t.Errorf("dropped %d URLs, want those over MaxPending (%d)", files, cloudflare.MaxPending)
	}
}

func TestNewRefuses(t *testing.T) {
	ok := cloudflare.Config{APIURL: "https://api.cloudflare.com/client/v4/", Zone: "z", Token: "t", PublicURL: "https://api.example.com"}
	for name, c := range map[string]func(*cloudflare.Config){
		"api url without slash":   func(c *cloudflare.Config) { c.APIURL = "https://api.cloudflare.com/client/v4" },
		"no zone":                 func(c *cloudflare.Config) { c.Zone = "" },
		"no token":                func(c *cloudflare.Config) { c.Token = "" },
		"public url with a slash": func(c *cloudflare.Config) { c.PublicURL += "/" },
	} {
		cfg := ok
		c(&cfg)
		if _, err := cloudflare.New(cfg); err == nil {
			t.Errorf("%s: New worked, want an error", name)
		}
	}
	if _, err := cloudflare.New(ok); err != nil {
		t.Errorf("New: %v", err)
	}
}

// TestDelayCoalesces: what is queued during the delay goes in one call,
// each URL once, and a change queued late in another's delay waits a whole
// delay of its own before it, so that the pods serve it first (a purge a
// moment after its write would let the edge cache the old answer again).
func TestDelayCoalesces(t *testing.T) {
	const delay = 300 * time.Millisecond
	r := start(t, cloudflare.Config{Delay: delay})
	r.p.Purge([]string{"/", "/a"})
	time.Sleep(delay * 2 / 3)
	late := time.Now()
	r.p.Purge([]string{"/", "/b"})
	calls := r.waitCalls(t, 1, 5*time.Second)
	if d := calls[0].At.Sub(late); d < delay {
		t.Errorf("purge %v after the last change, want a whole delay (%v) first", d, delay)
	}
	time.Sleep(delay)
	if calls := r.api.Calls(); len(calls) != 1 || !slices.Equal(calls[0].Files,
		[]string{"https://api.example.com/", "https://api.example.com/a", "https://api.example.com/b"}) {
		t.Errorf("calls %+v, want one of /, /a, /b", calls)
	}
}

// TestFailureLog: a batch that fails for good is logged once, as its
// status and a quoted excerpt with nothing of the token whatever its
// spelling; a redirect is not followed, not even to the same host, where Go
// would send the token along, and nothing reaches its target.
func TestFailureLog(t *testing.T) {
	const echoed = `purge: status 403, answer "{\"success\":false,\"errors\":[{\"code\":10000,\"message\":\"Invalid token [redacted]\"}]}"`
	for _, tc := range []struct {
		name     string
		tls      bool
		redirect int    // the status of a redirect answered; 0: a 403 echoing echo
		echo     string // the token as the 403 spells it
		want     string // the err logged
	}{
		{name: "307 to another port", redirect: 307, want: "purge: status 307, a redirect, not followed"},
		{name: "302 to another port", redirect: 302, want: "purge: status 302, a redirect, not followed"},
		{name: "308 from https:// to http:// on the same host", tls: true, redirect: 308, want: "purge: status 308, a redirect, not followed"},
		{name: "token upper-cased", echo: strings.ToUpper(token), want: echoed},
		{name: "token split by spaces", echo: strings.Join(strings.Split(token, ""), " "), want: echoed},
		{name: "token split by zero-width spaces", echo: strings.Join(strings.Split(token, ""), "\u200b"), want: echoed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := fakecloudflare.Start(t)
			api, c := fakecloudflare.Start(t), cloudflare.Config{Attempts: 1}
			if tc.tls {
				api = fakecloudflare.StartTLS(t)
				c.Client = api.Client()
			}
			if tc.redirect != 0 {
				api.Redirect(tc.redirect, target.URL()+"zones/zone-1/purge_cache")
			} else {
				api.FailWith(1, 403, []byte(`{"success":false,"errors":[{"code":10000,"message":"Invalid token `+tc.echo+`"}]}`))
			}
			r := newRig(t, api, c)
			r.run(t)
			r.p.Purge([]string{"/"})
			testkit.Eventually(t, "the batch dropped", func() bool { n, _ := r.obs.get(cloudflare.Dropped); return n == 1 })
			for _, call := range target.Calls() {
				t.Errorf("the redirect's target got a call with token %q, want none", call.Token)
			}
			if n := len(api.Calls()); n != 1 {
				t.Errorf("%d calls, want 1", n)
			}
			e := r.logs.FilterMessage("cloudflare purge failed, giving up").All()
			if len(e) != 1 {
				t.Fatalf("%d lines, want 1", len(e))
			}
			line := e[0].ContextMap()["err"].(string)
			// Without the zero-width spaces, raw or escaped, and every
			// separator, the token would show.
			if plain := strings.NewReplacer("\u200b", "", `\u200b`, "").Replace(line); strings.Contains(alnum(plain), alnum(token)) {
				t.Errorf("err %s holds the token", line)
			}
			if line != tc.want {
				t.Errorf("err %s, want %s", line, tc.want)
			}
		})
	}
}

// alnum returns s's ASCII letters and digits, lower-cased.
func alnum(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
			return r
		case 'A' <= r && r <= 'Z':
			return r + 'a' - 'A'
		}
		return -1
	}, s)
}

// TestQueueFullWarnsSeldom: a change a second for 1,000 seconds (1,000 apps
// at the default request spacing), each dropped by a full queue, logs a
// warning when the drops start and every 10 minutes while they go on, with
// the URLs dropped so far, and one line with them all once the queue is
// empty again. Every dropped URL is counted.
func TestQueueFullWarnsSeldom(t *testing.T) {
	clk, _ := passingClock()
	r := newRig(t, fakecloudflare.Start(t), cloudflare.Config{Clock: clk})
	r.p.Purge(paths("/p", cloudflare.MaxPending))
	const changes, urls = 1000, 13 // the URLs of an app with 10 platforms
	for i := range changes {
		r.p.Purge(paths(fmt.Sprintf("/app%d/", i), urls))
		clk.Advance(time.Second)
	}
	r.run(t)
	testkit.Eventually(t, "the queue drained", func() bool { return r.logs.FilterMessage("cloudflare purge queue drained").Len() > 0 })

	type line struct {
		msg  string
		urls int64
	}
	var got []line
	for _, e := range r.logs.FilterMessageSnippet("cloudflare purge queue").All() {
		got = append(got, line{e.Message, e.ContextMap()["urls"].(int64)})
	}
	want := []line{
		{"cloudflare purge queue full, urls dropped", urls},       // the first drop
		{"cloudflare purge queue full, urls dropped", 601 * urls}, // 10 minutes later
		{"cloudflare purge queue drained", changes * urls},        // all of them
	}
	if !slices.Equal(got, want) {
		t.Errorf("lines %v, want %v", got, want)
	}
	if _, files := r.obs.get(cloudflare.Dropped); files != changes*urls {
		t.Errorf("%d URLs counted dropped, want %d", files, changes*urls)
	}
}
