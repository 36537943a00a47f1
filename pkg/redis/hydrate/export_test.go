package hydrate

import "time"

// WithInterval sets how often every app is re-read while the server tracks
// the Hydrator's reads, instead of 5 s.
func WithInterval(d time.Duration) Option {
	return func(h *Hydrator) { h.interval = d }
}

// Counts is Stats, and whether the first load of every app finished.
type Counts struct {
	Stats
	Loaded bool
}

// Counts returns the Hydrator's counters.
func (h *Hydrator) Counts() Counts {
	c := Counts{Stats: h.Stats()}
	select {
	case <-h.loaded:
		c.Loaded = true
	default:
	}
	return c
}
