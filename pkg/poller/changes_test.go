package poller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
)

// TestChanges: Config.Changes hears of each change of the release served
// once, from the poller whose fetch made it; never of a fetch that moves
// only app_last_fetched, a 304, a failure or an entry read from the fleet
// (one purge per change, none for a poll that changes nothing).
func TestChanges(t *testing.T) {
	type poll struct {
		poller int // which of the two pollers polls
		answer release.Answer
		want   []string
	}
	tests := []struct {
		name              string
		fleet, coordinate bool
		polls             []poll
	}{
		{name: "standalone", polls: []poll{
			{0, fetched("v1", "e1"), []string{"a none→v1"}},
			{0, fetched("v1", "e2"), nil},
			{0, notModified(), nil},
			{0, failed(), nil},
			{0, fetched("v2", "e3"), []string{"a v1→v2"}},
			{0, fetched("", "e4"), []string{"a v2→none"}}}},
		{name: "two pollers uncoordinated", fleet: true, polls: []poll{
			{0, fetched("v1", "e1"), []string{"a none→v1"}},
			{1, fetched("v1", "e1"), nil},
			{1, fetched("v2", "e2"), []string{"a v1→v2"}},
			{0, fetched("v2", "e2"), nil},
			{0, notModified(), nil},
			{1, failed(), nil}}},
		{name: "two pollers coordinated", fleet: true, coordinate: true, polls: []poll{
			{0, fetched("v1", "e1"), []string{"a none→v1"}},
			{1, fetched("v2", "e2"), []string{"a v1→v2"}},
			{0, fetched("v2", "e3"), nil},
			{0, notModified(), nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fleet *fakeFleet
			if tt.fleet {
				fleet = newFleet()
			}
			hs := []*harness{newHarness(t, []string{"a"}, fleet, tt.coordinate)}
			if tt.fleet {
				hs = append(hs, newHarness(t, []string{"a"}, fleet, tt.coordinate))
			}
			for i, p := range tt.polls {
				h := hs[p.poller]
				// Every poll is an interval after the last, so that a is due.
				setClock(t, h.clock, at(timing.Interval*time.Duration(i)))
				h.source.script = map[string]release.Answer{"a": p.answer}
				h.p.Tick(context.Background())
				if asked, _ := h.source.take(); len(asked) != 1 {
					t.Fatalf("poll %d: asked %q, want a", i, asked)
				}
				wantList(t, fmt.Sprintf("poll %d (poller %d, %s): changes", i, p.poller, p.answer.Outcome), h.changes, p.want)
				h.changes = nil
			}
		})
	}
}
