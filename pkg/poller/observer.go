package poller

import (
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

// Mode is how a round works, as logged and as told to an Observer.
type Mode string

// The modes of a round.
const (
	Coordinated   Mode = "coordinated"   // reads and writes the Fleet
	Standalone    Mode = "standalone"    // memory only
	Uncoordinated Mode = "uncoordinated" // memory, and writes to the Fleet
)

// Op names a Fleet call, as told to an Observer.
type Op string

// The Fleet calls.
const (
	OpLoad           Op = "load"
	OpLoadApp        Op = "load_app"
	OpClaim          Op = "claim"
	OpPutFetch       Op = "put_fetch"
	OpPutNotModified Op = "put_not_modified"
	OpPutFailure     Op = "put_failure"
	OpPutBackoff     Op = "put_backoff" // writing or clearing the backoff
)

// Observer is told what the poller does, for metrics. Its methods are called
// from the poller's loop, one call at a time, and must not block.
type Observer interface {
	// Answer reports GitHub's answer about app, as the poller classified it,
	// with the quota the answer announced. An answer cut short by
	// cancellation is not reported.
	Answer(app string, a release.Answer)
	// Fetched reports that the last fetch or 304 the poller knows of for app,
	// its own or one read from the Fleet, moved to at.
	Fetched(app string, at time.Time)
	// Claim reports a claim the Fleet took (won) or refused.
	Claim(won bool)
	// WriteRefused reports a guarded write (OpPutFetch, OpPutNotModified or
	// OpPutFailure) that the Fleet refused because it held something newer.
	WriteRefused(op Op)
	// RedisError reports a Fleet call that failed. Errors caused by the
	// cancellation of the poller's context are not reported.
	RedisError(op Op)
	// Round reports the end of a tick not cut short by cancellation: how it
	// ran, how long it took by the poller's Clock, and the backoff the poller
	// holds after it (zero Until: none), whether or not the tick asked GitHub.
	// A round of refreshes (Refresh) that asked GitHub is reported too.
	Round(m Mode, took time.Duration, b schedule.Backoff)
	// Refreshed reports that this poller's fetch satisfied a refresh request
	// for app (schedule.Refreshed), took after the request was made.
	Refreshed(app string, took time.Duration)
	// ClockOffset reports how far the poller's clock ran ahead of the
	// Fleet's (Redis's TIME) when last measured, once a coordinated tick.
	ClockOffset(d time.Duration)
	// Paced reports the effective interval whenever it changes, and once at
	// the start: the configured one, or longer when the quota paces it.
	Paced(interval time.Duration)
	// RefreshesDeferred reports n refresh requests that did not cost a
	// GitHub request at once, and why (Coalesced, AppBudget, FleetBudget).
	RefreshesDeferred(why string, n int)
	// Entry reports app's entry as the poller now holds it, whenever its
	// fetch or its failure changed (the changes a Sink is told of): its own
	// answers and those of other pollers read from the Fleet, so that
	// failures in a row and a lost release are seen per app.
	Entry(app string, e release.Entry)
}

// nopObserver is the Observer of a Config that has none.
type nopObserver struct{}

func (nopObserver) Answer(string, release.Answer) {}

func (nopObserver) Fetched(string, time.Time) {}

func (nopObserver) Claim(bool) {}

func (nopObserver) WriteRefused(Op) {}

func (nopObserver) RedisError(Op) {}

func (nopObserver) Round(Mode, time.Duration, schedule.Backoff) {}

func (nopObserver) Refreshed(string, time.Duration) {}

func (nopObserver) ClockOffset(time.Duration) {}

func (nopObserver) Paced(time.Duration) {}

func (nopObserver) RefreshesDeferred(string, int) {}

func (nopObserver) Entry(string, release.Entry) {}
