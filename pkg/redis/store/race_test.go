package store

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/redistest"
)

// TestConcurrentWriters races several pollers, each with its own client, on
// one key with random times: the hash ends at the newest fetch written, never
// mixes the fields of two writes, and a reader never sees it go back in time.
func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	const (
		writers = 4
		writes  = 40
		app     = "photocraft"
	)
	key := AppKey(app)
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			srv := redistest.Start(t)
			a := newAdmin(t, srv)
			url := p.url(t, srv)
			stores := make([]*Store, writers)
			for i := range stores {
				stores[i] = newStore(t, url)
			}
			ctx := context.Background()

			stop, readerDone := make(chan struct{}), make(chan error, 1)
			go func() { readerDone <- watchNeverGoesBack(ctx, a, key, stop) }()

			var (
				mu      sync.Mutex
				newest  int64 // the newest fetched_ms written
				lost    atomic.Int64
				wg      sync.WaitGroup
				errs    = make(chan error, writers*writes)
				written atomic.Int64
				changed = make([]atomic.Bool, writers) // store i ran the script (or was refused it)
			)
			for i, s := range stores {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(i), 1))
					for k := range writes {
						// Times rise with jitter, so that writers keep
						// overtaking each other.
						when := t0.Add(time.Duration(k)*time.Second + time.Duration(rng.IntN(3000))*time.Millisecond)
						e := fetch(when, "e"+ms(when), rel("v"+ms(when)))
						ok, err := s.PutFetch(ctx, app, e)
						if errors.Is(err, errContended) {
							lost.Add(1)
							changed[i].Store(true)
							continue
						}
						if err != nil {
							errs <- err
							return
						}
						if ok {
							written.Add(1)
							changed[i].Store(true)
							mu.Lock()
							newest = max(newest, when.UnixMilli())
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			close(stop)
			if err := <-readerDone; err != nil {
				t.Error(err)
			}
			close(errs)
			for err := range errs {
				t.Fatalf("PutFetch: %v", err)
			}
			t.Logf("%d writes went through, %d lost every WATCH attempt", written.Load(), lost.Load())

			h := a.hgetall(key)
			if got := h["fetched_ms"]; got != strconv.FormatInt(newest, 10) {
				t.Errorf("fetched_ms = %s, want the newest written, %d", got, newest)
			}
			e := decoded(h)
			if e.ETag != "e"+h["fetched_ms"] || e.Release == nil || e.Release.Tag != "v"+h["fetched_ms"] {
				t.Errorf("the hash mixes writes: %v", h)
			}
			// A store whose every write was refused on time never ran the
			// script, so only the others have learnt the mode.
			for i, s := range stores {
				if got := s.Mode(); changed[i].Load() && got != p.mode {
					t.Errorf("store %d: Mode() = %v, want %v", i, got, p.mode)
				}
			}
		})
	}
}

// watchNeverGoesBack reads fetched_ms until stop and reports the first time
// it decreased.
func watchNeverGoesBack(ctx context.Context, a *admin, key string, stop <-chan struct{}) error {
	var last int64
	for reads := 0; ; reads++ {
		select {
		case <-stop:
			if reads == 0 {
				return errors.New("the reader never read")
			}
			return nil
		default:
		}
		s, err := a.c.Do(ctx, a.c.B().Hget().Key(key).Field("fetched_ms").Build()).ToString()
		if err != nil {
			continue // not written yet
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return err
		}
		if n < last {
			return errors.New("fetched_ms went back from " + strconv.FormatInt(last, 10) + " to " + s)
		}
		last = n
	}
}

// TestWatchRetries: when another writer touches the key between the WATCH
// path's read and its EXEC, EXEC does nothing and the write is decided again
// on what the other writer left.
func TestWatchRetries(t *testing.T) {
	t.Parallel()
	const app = "photocraft"
	key := AppKey(app)
	tests := []struct {
		name      string
		mine      time.Time
		theirs    []time.Time // fetches another poller lands before each EXEC
		want      bool
		wantErr   error
		wantFinal time.Time
	}{
		{"theirs is newer", at("12:02"), []time.Time{at("12:03")}, false, nil, at("12:03")},
		{"mine is still newer", at("12:04"), []time.Time{at("12:03")}, true, nil, at("12:04")},
		{"mine is newer, twice", at("12:09"), []time.Time{at("12:03"), at("12:05")}, true, nil, at("12:09")},
		{"never gets a turn", at("12:30"), []time.Time{at("12:01"), at("12:02"), at("12:03"), at("12:04"), at("12:05")},
			false, errContended, at("12:05")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := started(t)
			s, other, ctx := newStore(t, pollerURL(t, o.srv)), o.s, context.Background()
			s.watch.Store(true)
			var execs int
			got, err := putFetchBeforeExec(ctx, s, app, fetch(tt.mine, "mine", nil), func() {
				if execs < len(tt.theirs) {
					if _, err := other.PutFetch(ctx, app, fetch(tt.theirs[execs], "theirs", nil)); err != nil {
						t.Error(err)
					}
				}
				execs++
			})
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Errorf("PutFetch = %v, %v; want %v, %v", got, err, tt.want, tt.wantErr)
			}
			if final := decoded(o.a.hgetall(key)).FetchedAt; !final.Equal(tt.wantFinal) {
				t.Errorf("fetched at %v, want %v", final, tt.wantFinal)
			}
		})
	}
}

// TestWatchLeavesNoWatch: a write refused on the WATCH path leaves no WATCH
// on its connection, so another key's change does not abort the next write.
func TestWatchLeavesNoWatch(t *testing.T) {
	t.Parallel()
	o := started(t)
	s, other, ctx := newStore(t, pollerURL(t, o.srv)), o.s, context.Background()
	s.watch.Store(true)
	var execs int
	count := func() { execs++ }
	wrote(t)(other.PutFetch(ctx, "photocraft", fetch(at("12:05"), "theirs", nil)))
	if ok, err := putFetchBeforeExec(ctx, s, "photocraft", fetch(at("12:00"), "mine", nil), count); err != nil || ok {
		t.Fatalf("refused PutFetch = %v, %v; want false, nil", ok, err)
	}
	wrote(t)(other.PutFetch(ctx, "photocraft", fetch(at("12:06"), "theirs", nil)))
	wrote(t)(putFetchBeforeExec(ctx, s, "filmcraft", fetch(at("12:00"), "mine", nil), count))
	if execs != 1 {
		t.Errorf("the write took %d EXECs, want 1", execs)
	}
}

// putFetchBeforeExec is PutFetch on the WATCH path with hook run between its
// read and its EXEC, each time the decision is to write.
func putFetchBeforeExec(ctx context.Context, s *Store, app string, e release.Entry, hook func()) (bool, error) {
	ch, err := s.fetchChange(app, e)
	if err != nil {
		return false, err
	}
	decide := ch.decide
	ch.decide = func(h map[string]string) verdict {
		v := decide(h)
		if v == written {
			hook()
		}
		return v
	}
	v, err := s.apply(ctx, ch)
	return err == nil && v == written, err
}
