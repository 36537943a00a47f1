package store

import (
	"sync"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/logsafe"
)

// Refusals tells of app hashes that a reader refused (DecodeApp's error):
// each is counted, and logged at warn once per app and writer (the hash's
// "by") until that app reads well again, so that a poisoned hash read every
// few seconds is one line, not one a read. It is safe for concurrent use.
type Refusals struct {
	log   *zap.Logger
	count func(app string)

	mu     sync.Mutex
	logged map[string]string // app → the writer whose refusal was logged last
}

// NewRefusals returns Refusals that log to log (nil: nowhere) and call count,
// when not nil, for every refusal.
func NewRefusals(log *zap.Logger, count func(app string)) *Refusals {
	if log == nil {
		log = zap.NewNop()
	}
	return &Refusals{log: log, count: count, logged: make(map[string]string)}
}

// Note records what reading app's hash h gave: err nil for a hash read well
// (or absent), else why it was refused. A nil Refusals notes nothing.
func (r *Refusals) Note(app string, h map[string]string, err error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.logged, app)
		return
	}
	if r.count != nil {
		r.count(app)
	}
	by := h[fieldBy]
	if w, ok := r.logged[app]; ok && w == by {
		return
	}
	r.logged[app] = by
	r.log.Warn("redis entry refused, keeping what was known", zap.String("app", app),
		logsafe.String("by", by), logsafe.NamedError("err", err))
}
