package store

import (
	"context"
	"errors"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/test/fakeredis"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestSilentRedis: against a Redis that completes the handshake and then
// never answers, every call fails with a timeout instead of hanging, the
// silence is not taken for a refusal of scripts, and closing the client
// leaves nothing behind.
func TestSilentRedis(t *testing.T) {
	testkit.Integration(t)
	srv := fakeredis.StartSilent(t)
	before := runtime.NumGoroutine()

	const timeout = 300 * time.Millisecond
	c := must(redis.OpenURL(withTimeout(srv.URL(), timeout)))(t)
	s := New(c, "poller-a", testApps)
	w := New(c, "poller-a", testApps)
	w.watch.Store(true)
	ctx := context.Background() // no deadline: any timeout is the Store's
	e := fetch(at("12:00"), `"e"`, rel("v1"))
	tests := append(callsOf(ctx, s),
		call{"claim in a transaction", func() error { _, err := w.Claim(ctx, "photocraft", at("12:00"), time.Minute); return err }},
		call{"fetch in a transaction", func() error { _, err := w.PutFetch(ctx, "photocraft", e); return err }})
	for _, tt := range tests {
		err := tt.do()
		t.Logf("%s: %v", tt.name, err)
		if !isTimeout(err) {
			t.Errorf("%s: got error %v, want a timeout", tt.name, err)
		}
	}
	if got := s.Mode(); got != ModeScript {
		t.Errorf("Mode() = %v, want %v: silence is no refusal of scripts", got, ModeScript)
	}

	// The client alone gives up too: its connections time out even when
	// the caller's context allows far longer.
	generous, cancel := context.WithTimeout(ctx, 20*timeout)
	defer cancel()
	client := must(c.Client(generous))(t)
	if err := client.Do(generous, client.B().Ping().Build()).Error(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("PING with a generous deadline: got %v, want the connection's own timeout", err)
	}
	if got := srv.Accepted(); got == 0 {
		t.Errorf("the client never connected to the silent Redis")
	}

	c.Close()
	testkit.Eventually(t, "the client's connections to close", func() bool { return srv.Conns() == 0 })
	testkit.Eventually(t, "goroutines back to their number before the client", func() bool {
		return runtime.NumGoroutine() <= before
	})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// TestConnections: however many calls run at once, the poller's client holds
// at most two connections, one pipelined and one for transactions.
func TestConnections(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, pollerURL(t, srv))
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := s.Load(ctx, apps13); err != nil {
				errs <- err
			}
			when := at("12:00").Add(time.Duration(i) * time.Second)
			if _, err := s.PutFetch(ctx, apps13[i%len(apps13)], fetch(when, "e", nil)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := s.Mode(); got != ModeWatch {
		t.Fatalf("Mode() = %v, want %v: the transactions' connection went unused", got, ModeWatch)
	}
	list := must(newAdmin(t, srv).do("CLIENT", "LIST").ToString())(t)
	var conns int
	for line := range strings.Lines(list) {
		if strings.Contains(line, " user=poller ") {
			conns++
		}
	}
	t.Logf("%d connections", conns)
	if conns == 0 || conns > 2 {
		t.Errorf("the client holds %d connections, want 1 or 2:\n%s", conns, list)
	}
}

// TestWithoutClientTracking: the poller's client does no client-side
// caching, so it works where CLIENT TRACKING (here every CLIENT command) is
// unavailable.
func TestWithoutClientTracking(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--rename-command", "CLIENT", "")
	s := newStore(t, srv.URL())
	ctx := context.Background()
	wrote(t)(s.PutFetch(ctx, "photocraft", fetch(at("12:00"), "e", nil)))
	got, _, err := s.Load(ctx, apps13)
	if err != nil {
		t.Fatal(err)
	}
	if !got["photocraft"].FetchedAt.Equal(at("12:00")) {
		t.Errorf("Load read %s, want the fetch at 12:00", fmtEntry(got["photocraft"]))
	}
}
