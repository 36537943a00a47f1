package daemon

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"
)

// dateClock holds the Date header's value (RFC 9110, 6.6.1), made once a
// second: net/http otherwise reads the clock and formats the time for every
// answer (about 1 % of a bare net/http server's CPU for the 13-app answer).
// The value is the current second but for the moment after each second
// begins, before the clock's timer fires.
type dateClock struct {
	value atomic.Pointer[[]string]
}

// newDateClock returns a clock holding the current second; run keeps it so.
func newDateClock() *dateClock {
	d := &dateClock{}
	d.set(time.Now())
	return d
}

func (d *dateClock) set(t time.Time) {
	v := []string{t.UTC().Format(http.TimeFormat)}
	d.value.Store(&v)
}

// run sets the value as each second begins, until ctx is done.
func (d *dateClock) run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		now := time.Now()
		d.set(now)
		timer.Reset(now.Truncate(time.Second).Add(time.Second).Sub(now))
	}
}

// dated returns next with every answer's Date set from d. A handler may
// still set its own; none changes the shared value, since Header.Set
// replaces it and Header.Add appends to a copy.
func (d *dateClock) dated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Date"] = *d.value.Load()
		next.ServeHTTP(w, r)
	})
}
