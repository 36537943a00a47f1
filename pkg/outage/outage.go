// Package outage tracks one kind of trouble for the logs: since when it lasts,
// one warning at most every Every while it lasts, and one line when it ends,
// each with how long the trouble had lasted under the key "away".
package outage

import (
	"time"

	"go.uber.org/zap"
)

// Every is the least time between two warnings of one outage.
const Every = 10 * time.Minute

// Tracker follows one kind of trouble. Its zero value is ready to use and
// means no outage. It is not safe for concurrent use: each is owned by one
// loop.
type Tracker struct {
	since, warned time.Time
}

// Down notes a failure seen at now of a call that started at start (which
// may have waited out its whole timeout): the outage counts from the start of
// its first failing call. It logs msg as a warning with fields, unless it
// warned less than Every ago.
func (o *Tracker) Down(log *zap.Logger, start, now time.Time, msg string, fields ...zap.Field) {
	if o.since.IsZero() {
		o.since = start
	}
	if !o.warned.IsZero() && now.Sub(o.warned) < Every {
		return
	}
	o.warned = now
	log.Warn(msg, append([]zap.Field{zap.Duration("away", now.Sub(o.since))}, fields...)...)
}

// Up ends the outage, if there is one, logging msg with how long it lasted
// and fields.
func (o *Tracker) Up(log *zap.Logger, now time.Time, msg string, fields ...zap.Field) {
	if o.since.IsZero() {
		return
	}
	log.Info(msg, append([]zap.Field{zap.Duration("away", now.Sub(o.since))}, fields...)...)
	*o = Tracker{}
}
