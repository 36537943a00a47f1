package hydrate

import "time"

// WithInterval sets how often every app is re-read while the server tracks
// the Hydrator's reads, instead of 5 s.
func WithInterval(d time.Duration) Option {
	return func(h *Hydrator) { h.interval = d }
}

// Counts is Stats with the counters only tests look at.
type Counts struct {
	Stats
	Loaded   bool   // the first load of every app finished
	Reads    uint64 // hashes read (the apps', and the meta hash with WithMeta), from Redis or from the local cache
	Missing  uint64 // reads that found nothing usable: flushed, expired, another format version, not a hash
	Failures uint64 // connection attempts and reads that failed
	Metas    uint64 // calls to the meta sink's SetMeta
}

// Counts returns the Hydrator's counters.
func (h *Hydrator) Counts() Counts {
	c := Counts{Stats: h.Stats(), Reads: h.reads.Load(), Missing: h.missing.Load(),
		Failures: h.failures.Load(), Metas: h.metas.Load()}
	select {
	case <-h.loaded:
		c.Loaded = true
	default:
	}
	return c
}
