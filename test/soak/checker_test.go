package soak

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/redistest"
)

func TestRewritePorts(t *testing.T) {
	ports := map[string]string{"40123": "51234", "40124": "51235"}
	tests := []struct{ name, in, want string }{
		{"a bulk string that is a port", "40123\r\n", "51234\r\n"},
		{"a switch-master message", "craft 127.0.0.1 40123 127.0.0.1 40124\r\n", "craft 127.0.0.1 51234 127.0.0.1 51235\r\n"},
		{"a port inside a longer word stays", "140123\r\n", "140123\r\n"},
		{"a length line stays", "$5\r\n", "$5\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(rewritePorts([]byte(tt.in), ports)); got != tt.want {
				t.Errorf("rewritePorts(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRedisGateStalls(t *testing.T) {
	srv := redistest.Start(t)
	g, err := newRedisGate(nil, []string{srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	addr := g.Addr(srv.Addr)
	if got, err := redistest.Query(addr, "PING"); err != nil || got != "PONG" {
		t.Fatalf("PING through the gate = %v, %v; want PONG", got, err)
	}
	held, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	g.Stall()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("a stalled gate must still accept: %v", err)
	}
	defer conn.Close()
	_, _ = conn.Write([]byte("*1\r\n$4\r\nPING\r\n"))
	_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := conn.Read(make([]byte, 16)); err == nil {
		t.Fatalf("a stalled gate answered %d bytes", n)
	} else if ne := net.Error(nil); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read through a stalled gate: %v, want a timeout", err)
	}

	g.Resume()
	_ = held.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := held.Read(make([]byte, 1)); err == nil {
		t.Error("a connection open during the stall still works after it")
	}
	if got, err := redistest.Query(addr, "PING"); err != nil || got != "PONG" {
		t.Fatalf("PING after the stall = %v, %v; want PONG", got, err)
	}
}

func answerAt(t0 time.Time, sec float64, n int, fetched time.Time) podAnswer {
	at := t0.Add(time.Duration(sec * float64(time.Second)))
	return podAnswer{Pod: "api-1#1", Start: at, End: at.Add(time.Millisecond), Status: 200,
		Tags: map[string]int{apps[0].Key: n}, Fetched: map[string]time.Time{apps[0].Key: fetched}}
}

func requestAt(t0 time.Time, sec float64, status int) ghRequest {
	at := t0.Add(time.Duration(sec * float64(time.Second)))
	return ghRequest{Poller: "poller-1#1", Repo: apps[0].Repo, At: at, Done: at.Add(10 * time.Millisecond), Status: status}
}

// TestChecks runs the checks on made-up records of one pod, one app and one
// poller: each must catch what it is for and pass what the rules allow.
func TestChecks(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	f1, f2 := at(-1), at(11)
	good := []podAnswer{answerAt(t0, 1, 1, f1), answerAt(t0, 12, 2, f2), answerAt(t0, 20, 2, f2)}
	paced := []ghRequest{requestAt(t0, 0, 200), requestAt(t0, 8, 304), requestAt(t0, 16, 200)}
	twice := append(paced[:3:3], requestAt(t0, 16.5, 304))
	// Redis's clock an hour back from 12 s to 13 s; GitHub fails until the
	// app is fetched again at 33 s, which pods have hydrated by 44 s.
	step := []fault{{Kind: faultClockStep, Start: at(12), End: at(13), Step: -time.Hour}}
	stepped := []ghRequest{requestAt(t0, 0, 200), requestAt(t0, 8, 304), requestAt(t0, 12.2, 200), requestAt(t0, 20, 500), requestAt(t0, 33, 304)}
	delivered := []webhookDelivery{{App: apps[0].Key, Repo: apps[0].Repo, Tag: tagOf(2), At: at(10), Status: 202}}
	limited := []fault{{Kind: faultRateLimit, Start: at(29), End: at(35)}}
	tests := []struct {
		name       string
		answers    []podAnswer
		requests   []ghRequest
		faults     []fault
		flushes    []flushRepair
		deliveries []webhookDelivery
		backoffs   []window
		want       string // in a failure; "" for none
	}{
		{name: "all well", answers: good, requests: paced},
		{name: "a bad answer", answers: append(good[:3:3], podAnswer{Pod: "api-1#1", Start: at(30), End: at(30), Bad: "status 500"}),
			requests: paced, want: "not 200 with a valid body"},
		{name: "an older release after a newer one", answers: append(good[:3:3], answerAt(t0, 30, 1, f1)), requests: paced, want: "regressions"},
		{name: "an older fetch time after a newer one", answers: append(good[:3:3], answerAt(t0, 30, 2, f1)), requests: paced, want: "regressions"},
		{name: "answers in flight together may cross", answers: append(good[:3:3], podAnswer{Pod: "api-1#1", Start: at(11.9), End: at(12.1), Status: 200,
			Tags: map[string]int{apps[0].Key: 1}, Fetched: map[string]time.Time{apps[0].Key: f1}}), requests: paced},
		{name: "a release never served", answers: good[:1], requests: paced, want: "never reached"},
		{name: "an app asked twice in a tick", answers: good, requests: twice, want: "with no fault to explain it"},
		{name: "an app asked twice while Redis was flushed", answers: good, requests: twice, faults: []fault{{Kind: faultFlush, Start: at(15), End: at(15)}}},
		{name: "a retry after a rate limit", answers: good, requests: []ghRequest{requestAt(t0, 0, 403), requestAt(t0, 2, 200)}},
		{name: "two requests inside a rate-limit window", answers: good, faults: limited,
			requests: []ghRequest{requestAt(t0, 30, 403), requestAt(t0, 31, 403)}, want: "inside the rate-limit window"},
		{name: "a request after the reset inside the fleet backoff", answers: good, faults: limited,
			requests: []ghRequest{requestAt(t0, 30, 403), requestAt(t0, 36, 200)}, want: "inside the fleet backoff"},
		{name: "a slow flush repair", answers: good, requests: paced,
			flushes: []flushRepair{{At: at(5), Took: 8 * time.Second, Repaired: true}}, want: "FLUSHALL"},
		{name: "a release delivered by webhook, served at once", requests: paced, deliveries: delivered,
			answers: []podAnswer{answerAt(t0, 1, 1, f1), answerAt(t0, 10.1, 2, f2), answerAt(t0, 20, 2, f2)}},
		{name: "a release delivered by webhook, served 2 s later", answers: good, requests: paced, deliveries: delivered,
			want: "want under 1s with the webhook"},
		{name: "a release delivered by webhook during a fault, served 2 s later", answers: good, requests: paced, deliveries: delivered,
			faults: []fault{{Kind: faultGitHub500, Start: at(9), End: at(11)}}},
		{name: "a release delivered by webhook during a fleet backoff, served 2 s later", answers: good, requests: paced, deliveries: delivered,
			backoffs: []window{{From: at(5), Until: at(11)}}},
		{name: "a fetch time set back by a Redis clock step, until the app is fetched again", requests: stepped,
			faults: step, answers: append(good[:2:2], answerAt(t0, 12.5, 2, f2.Add(-time.Hour)), answerAt(t0, 43, 2, f2.Add(-time.Hour)))},
		{name: "a fetch time set back by a Redis clock step, after the app was fetched again", requests: stepped,
			faults: step, answers: append(good[:2:2], answerAt(t0, 12.5, 2, f2.Add(-time.Hour)), answerAt(t0, 45, 2, f2.Add(-time.Hour))),
			want: "regressions"},
		{name: "an app asked again after a webhook delivery", answers: good, requests: twice,
			deliveries: []webhookDelivery{{App: apps[0].Key, Repo: apps[0].Repo, Tag: tagOf(3), At: at(16.4), Status: 202}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &proc{name: "api-1#1", exited: make(chan struct{})}
			poller := &proc{name: "poller-1#1", exited: make(chan struct{}), backoffs: tt.backoffs}
			s := &soak{
				began: t0, faultsEnd: t0.Add(time.Minute), settled: t0.Add(time.Minute), loadEnded: t0.Add(2 * time.Minute),
				pods: []*proc{pod}, procs: []*proc{pod, poller}, stats: map[string][]processStats{},
				published: []publication{{App: apps[0].Key, N: 1, Tag: tagOf(1), At: t0}, {App: apps[0].Key, N: 2, Tag: tagOf(2), At: t0.Add(10 * time.Second)}},
				answers:   tt.answers, requests: tt.requests, faults: tt.faults, flushes: tt.flushes, deliveries: tt.deliveries,
			}
			got := strings.Join(s.check().Failures, "\n")
			switch {
			case tt.want == "" && got != "":
				t.Errorf("failures:\n%s\nwant none", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("failures:\n%s\nwant one with %q", got, tt.want)
			}
		})
	}
}

func TestScanLogs(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		unsafe bool
	}{
		{"json with escapes", `{"level":"warn","by":"\"EVIL\\u202eDENWO\"","err":"a\tb\u001b[2J\u0085"}`, false},
		{"non-ascii letters", `{"msg":"PhotoCraft é, версия"}`, false},
		{"right-to-left override", "{\"by\":\"EVIL\u202eDENWO\"}", true},
		{"other bidi controls", "\u200e\u200f\u202a\u2066\u2069\u061c", true},
		{"esc", "\x1b]0;pwned\a", true},
		{"tab", "a\tb", true},
		{"carriage return", "a\rb", true},
		{"del", "a\x7fb", true},
		{"c1", "a\u009b2J", true},
		{"next line", "a\u0085b", true},
		{"zero-width space", "ad\u200bmin", true},
		{"byte order mark", "\ufeff{}", true},
		{"line separator", "a\u2028b", true},
		{"not utf-8", "a\x9b2J", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "api-1.log"), []byte("{\"msg\":\"listening\"}\n"+tt.line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			found, err := scanLogs(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(found) > 0; got != tt.unsafe {
				t.Errorf("scan of %q found %q, want unsafe %v", tt.line, found, tt.unsafe)
			}
			if tt.unsafe && len(found) == 1 && !strings.HasPrefix(found[0], "api-1.log: 1 lines hold a control or format character raw, the first (line 2): ") {
				t.Errorf("got %q, want the file, the count and the first line", found[0])
			}
		})
	}
}
