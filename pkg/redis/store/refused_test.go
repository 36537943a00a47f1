package store

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestRefusedRedisFailsAtOnce: a Redis that refuses connections (stopped,
// restarting) fails every call at once with the refusal, before connecting
// and after, instead of retrying until the call's timeout: otherwise every
// tick of a poller would stretch to that timeout during the outage. The
// timeout here is a minute, so a call that waited for it could not pass.
func TestRefusedRedisFailsAtOnce(t *testing.T) {
	t.Parallel()
	const timeout = time.Minute
	srv := redistest.Start(t)
	connected := newStore(t, withTimeout(pollerURL(t, srv), timeout))
	ctx := context.Background()
	if _, _, err := connected.Load(ctx, apps13); err != nil {
		t.Fatalf("load before the outage: %v", err)
	}
	url := pollerURL(t, srv)
	srv.Stop()
	never := newStore(t, withTimeout(url, timeout))
	for _, s := range []struct {
		name  string
		store *Store
	}{{"a client that was connected", connected}, {"a client that never connected", never}} {
		calls := callsOf(ctx, s.store)
		for _, c := range calls {
			began := time.Now()
			err := c.do()
			took := time.Since(began)
			t.Logf("%s, %s: %v after %v", s.name, c.name, err, took)
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("%s, %s: got %v, want the refusal", s.name, c.name, err)
			}
			// Retrying until the deadline ends just short of it.
			if took >= timeout/2 {
				t.Errorf("%s, %s: took %v, waiting out the %v timeout", s.name, c.name, took, timeout)
			}
		}
	}
	// Failing fast is no giving up: the client reconnects once Redis is back.
	srv.Restart()
	pollerURL(t, srv)
	testkit.Eventually(t, "a load once Redis is back", func() bool {
		_, _, err := connected.Load(ctx, apps13)
		return err == nil
	})
}

// TestRefused: what real redis-server answers a client it refuses for its
// configuration, against an outage.
func TestRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	poller, keyless := userURL(t, srv, "poller", "~*", "&*", "+@all", "-hstrlen"), userURL(t, srv, "keyless", "~other:*", "&*", "+@all")
	locked := redistest.Start(t)
	locked.MustDo("CONFIG", "SET", "requirepass", "right")
	down := redistest.Start(t)
	down.Stop()
	tests := []struct {
		name string
		url  string
		want bool
	}{
		{"a wrong password (WRONGPASS)", "redis://poller:wrong@" + srv.Addr, true},
		{"an unknown user (WRONGPASS)", "redis://nobody:pw@" + srv.Addr, true},
		{"a command the user may not run (NOPERM)", poller, true},
		{"keys the user may not read (NOPERM)", keyless, true},
		{"no password where one is required (NOAUTH)", "redis://" + locked.Addr, true},
		{"a working user", "redis://:any@" + srv.Addr, false},
		{"a refused connection", down.URL(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t, withTimeout(tt.url, time.Second))
			_, _, err := s.Load(context.Background(), apps13)
			if got := AccessDenied(err); got != tt.want {
				t.Errorf("Refused(%v) = %v, want %v", err, got, tt.want)
			}
		})
	}
}
