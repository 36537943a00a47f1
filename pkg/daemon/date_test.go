package daemon

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/test/testkit"
)

// parseDate parses a Date value, failing the test on a malformed one.
func parseDate(t *testing.T, v string) time.Time {
	t.Helper()
	d, err := http.ParseTime(v)
	if err != nil || v != d.Format(http.TimeFormat) {
		t.Fatalf("Date %q is not an IMF-fixdate (%v)", v, err)
	}
	return d
}

// withinSecond fails the test unless d is the second of some instant
// between from and to.
func withinSecond(t *testing.T, d, from, to time.Time) {
	t.Helper()
	if d.Before(from.Truncate(time.Second)) || d.After(to) {
		t.Fatalf("Date %v, want a second from %v to %v", d, from, to)
	}
}

func TestDateClockTicks(t *testing.T) {
	t.Parallel()
	before := time.Now()
	d := newDateClock()
	first := parseDate(t, (*d.value.Load())[0])
	withinSecond(t, first, before, time.Now())

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { d.run(ctx); close(stopped) }()
	var next time.Time
	testkit.Eventually(t, "the Date to move to the next second", func() bool {
		next = parseDate(t, (*d.value.Load())[0])
		return next.After(first)
	})
	now := time.Now()
	withinSecond(t, next, now.Add(-time.Second), now)

	cancel()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("run still running 5 s after its context ended")
	}
}

// TestDatedAnswers checks that a handler finds Date set before it writes
// (net/http would format its own only then), that the answer carries it,
// and that a handler's own Date wins without changing the shared value.
func TestDatedAnswers(t *testing.T) {
	t.Parallel()
	seen := make(chan string, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		seen <- w.Header().Get("Date")
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("/own", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Add("Date", "Thu, 01 Jan 1970 00:00:00 GMT")
		w.Header()["Date"] = w.Header()["Date"][1:]
		_, _ = io.WriteString(w, "ok")
	})
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, Listening{Handler: mux, Listener: ln}, time.Second, zap.NewNop()) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	base := "http://" + ln.Addr().String()

	for range 3 {
		before := time.Now()
		res, err := http.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		after := time.Now()
		got := res.Header.Get("Date")
		if set := <-seen; set != got {
			t.Fatalf("the handler found Date %q, the answer carries %q", set, got)
		}
		withinSecond(t, parseDate(t, got), before.Add(-time.Second), after)
	}

	res, err := http.Get(base + "/own")
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if got := res.Header.Values("Date"); len(got) != 1 || got[0] != "Thu, 01 Jan 1970 00:00:00 GMT" {
		t.Fatalf("a handler's own Date: the answer carries %q", got)
	}
	res, err = http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if got := <-seen; got == "Thu, 01 Jan 1970 00:00:00 GMT" {
		t.Fatal("a handler's Header.Add changed every answer's Date")
	}
}
