package poller_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
)

// TestObserverEntries: every change of an app's fetch or failure reaches
// the Observer with the whole entry, its own answers and the fleet's alike;
// a round that changes nothing reports nothing.
func TestObserverEntries(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		h := newHarness(t, []string{"a", "b"}, nil, false)
		h.tick(t, 0, answers{"a": fetched("v1", "e1"), "b": failed()})
		if got, want := h.obs.take("entry"), []string{"a v1 ok", "b never failing 1"}; !slices.Equal(got, want) {
			t.Fatalf("first round: entries %q, want %q", got, want)
		}
		// b is retried, a is not due: only b's failures move.
		var got []string
		h.ticks(t, timing.Tick, 10*time.Minute, func(time.Duration) release.Answer { return failed() }, func(time.Duration) {
			got = append(got, h.obs.take("entry")...)
		})
		if len(got) < 2 || got[0] != "b never failing 2" || got[1] != "b never failing 3" {
			t.Fatalf("retries: entries %q, want b failing 2, then 3, …", got)
		}
		h.tick(t, timing.Interval, answers{"a": notFound(), "b": fetched("v2", "e2")})
		wantList(t, "a 404 and b's recovery: entries", h.obs.take("entry"), []string{"a v1 failing 1", "b v2 ok"})
	})
	t.Run("coordinated: another poller's failures, read from the fleet", func(t *testing.T) {
		f := newFleet()
		f.set("a", release.Entry{FetchedAt: at(-time.Minute), Release: rel("v1"), ETag: "e1"})
		f.set("b", release.Entry{FailedAt: at(-time.Minute), Failures: 4})
		h := newHarness(t, []string{"a", "b"}, f, true)
		h.p.Tick(context.Background())
		wantList(t, "entries", h.obs.take("entry"), []string{"a v1 ok", "b never failing 4"})
		h.p.Tick(context.Background())
		wantList(t, "a tick that changed nothing: entries", h.obs.take("entry"), nil)
	})
}
