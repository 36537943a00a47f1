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

	"github.com/redis/rueidis"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/silentredis"
	"github.com/storytold/craft-releases/test/testkit"
)

func TestNewClientURL(t *testing.T) {
	// Nothing listens on these addresses: NewClient must not dial.
	tests := []struct {
		name     string
		url      string
		wantErr  bool
		wantMode rueidis.ClientMode
	}{
		{"redis", "redis://:hunter2@127.0.0.1:1", false, rueidis.ClientModeStandalone},
		{"redis with a user and a database", "redis://poller:hunter2@127.0.0.1:1/2", false, rueidis.ClientModeStandalone},
		{"rediss", "rediss://poller:hunter2@127.0.0.1:1", false, rueidis.ClientModeStandalone},
		{"cluster", "redis://:hunter2@127.0.0.1:1?addr=127.0.0.1:2&addr=127.0.0.1:3", false, rueidis.ClientModeCluster},
		{"sentinel", "redis://127.0.0.1:1?master_set=main", false, rueidis.ClientModeSentinel},
		{"bad escape in the password", "redis://poller:hun%zzter2@127.0.0.1:1", true, ""},
		{"bad port", "redis://poller:hunter2@127.0.0.1:port", true, ""},
		{"bad scheme", "http://poller:hunter2@127.0.0.1:1", true, ""},
		{"bad database", "redis://poller:hunter2@127.0.0.1:1/db", true, ""},
		{"bad path", "redis://poller:hunter2@127.0.0.1:1/0/1", true, ""},
		{"control character", "redis://poller:hunter2\n@127.0.0.1:1", true, ""},
	}
	for _, tt := range tests {
		c, err := NewClient(tt.url)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: NewClient(%q) error = %v, want error %v", tt.name, tt.url, err, tt.wantErr)
		}
		if err != nil {
			for _, secret := range []string{"hunter2", "hun", "zzter2", "ter2"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("%s: error %q shows the password (%q)", tt.name, err, secret)
				}
			}
			continue
		}
		if got := c.Mode(); got != tt.wantMode {
			t.Errorf("%s: Mode() before connecting = %q, want %q", tt.name, got, tt.wantMode)
		}
		c.Close()
	}
}

// TestSilentRedis: against a Redis that completes the handshake and then
// never answers, every call fails with a timeout instead of hanging, the
// silence is not taken for a refusal of scripts, and closing the client
// leaves nothing behind.
func TestSilentRedis(t *testing.T) {
	srv := silentredis.Start(t)
	before := runtime.NumGoroutine()

	const timeout = 300 * time.Millisecond
	c, err := NewClient(srv.URL(), WithTimeout(timeout))
	if err != nil {
		t.Fatal(err)
	}
	s := New(c, "poller-a", WithTimeout(timeout))
	w := New(c, "poller-a", WithTimeout(timeout))
	w.watch.Store(true)
	ctx := context.Background() // no deadline: any timeout is the Store's
	e := fetch(at("12:00"), `"e"`, rel("v1"))
	f := release.Entry{FailedAt: at("12:00"), Failures: 1}

	tests := []struct {
		name string
		do   func() error
	}{
		{"load", func() error { _, _, err := s.Load(ctx, apps13); return err }},
		{"load one app", func() error { _, _, err := s.LoadApp(ctx, "photocraft"); return err }},
		{"status", func() error { _, _, err := s.Status(ctx, apps13); return err }},
		{"claim", func() error { _, err := s.Claim(ctx, "photocraft", at("12:00"), time.Minute); return err }},
		{"fetch", func() error { _, err := s.PutFetch(ctx, "photocraft", e); return err }},
		{"304", func() error { _, err := s.PutNotModified(ctx, "photocraft", e); return err }},
		{"failure", func() error { _, err := s.PutFailure(ctx, "photocraft", f); return err }},
		{"backoff", func() error { return s.PutBackoff(ctx, schedule.Backoff{Until: at("13:00"), Trouble: 1}) }},
		{"clear backoff", func() error { return s.PutBackoff(ctx, schedule.Backoff{}) }},
		{"claim in a transaction", func() error { _, err := w.Claim(ctx, "photocraft", at("12:00"), time.Minute); return err }},
		{"fetch in a transaction", func() error { _, err := w.PutFetch(ctx, "photocraft", e); return err }},
	}
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
	err = c.Do(generous, c.B().Ping().Build()).Error()
	if !errors.Is(err, os.ErrDeadlineExceeded) {
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
	srv := redistest.Start(t)
	a := newAdmin(t, srv)
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
	list, err := a.do("CLIENT", "LIST").ToString()
	if err != nil {
		t.Fatal(err)
	}
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

// TestBuiltBeforeConnecting: a command built by a NewClient client before it
// connected goes to a single Redis, and fails once, without harm, when the
// client finds a cluster.
func TestBuiltBeforeConnecting(t *testing.T) {
	tests := []struct {
		topology topology
		wantErr  error
	}{
		{topologies[0], nil},
		{topologies[1], errBuiltTooEarly},
	}
	for _, tt := range tests {
		t.Run(tt.topology.name, func(t *testing.T) {
			srv := tt.topology.start(t)
			c, err := NewClient(srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx := context.Background()
			early := c.B().Set().Key("photocraft").Value("1").Build()
			if err := c.Do(ctx, early).Error(); !errors.Is(err, tt.wantErr) {
				t.Errorf("command built before connecting: got %v, want %v", err, tt.wantErr)
			}
			if err := c.Do(ctx, c.B().Set().Key("photocraft").Value("2").Build()).Error(); err != nil {
				t.Errorf("command built after connecting: %v", err)
			}
			multi := c.DoMulti(ctx, c.B().Get().Key("photocraft").Build(), c.B().Get().Key("filmcraft").Build())
			if got, err := multi[0].ToString(); err != nil || got != "2" {
				t.Errorf("GET = %q, %v; want 2", got, err)
			}
		})
	}
}

// TestDedicateWhileDown: a dedicated client asked for while Redis is down
// fails every command instead of hanging or panicking.
func TestDedicateWhileDown(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	c, err := NewClient(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d, cancel := c.Dedicate()
	defer cancel()
	ctx := context.Background()
	if err := d.Do(ctx, d.B().Ping().Build()).Error(); err == nil {
		t.Error("Do on a dedicated client of a down Redis: got no error")
	}
	if err := <-d.SetPubSubHooks(rueidis.PubSubHooks{}); err == nil {
		t.Error("SetPubSubHooks on a dedicated client of a down Redis: got no error")
	}
	if err := c.Dedicated(func(rueidis.DedicatedClient) error { return nil }); err == nil {
		t.Error("Dedicated on a down Redis: got no error")
	}
}

// TestWithoutClientTracking: the poller's client does no client-side
// caching, so it works where CLIENT TRACKING (here every CLIENT command) is
// unavailable.
func TestWithoutClientTracking(t *testing.T) {
	srv := redistest.Start(t, "--rename-command", "CLIENT", "")
	s := newStore(t, srv.URL())
	ctx := context.Background()
	if ok, err := s.PutFetch(ctx, "photocraft", fetch(at("12:00"), "e", nil)); err != nil || !ok {
		t.Fatalf("PutFetch = %v, %v; want true, nil", ok, err)
	}
	got, _, err := s.Load(ctx, apps13)
	if err != nil {
		t.Fatal(err)
	}
	if !got["photocraft"].FetchedAt.Equal(at("12:00")) {
		t.Errorf("Load read %s, want the fetch at 12:00", fmtEntry(got["photocraft"]))
	}
}
