package store

import (
	"sync"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/logsafe"
)

// Refusals tells of hashes that a reader refused: an app hash (DecodeApp's
// error) or a refresh request over its bound. Each is counted, and logged at
// warn once per hash and writer (the hash's "by") until that hash reads well
// again, so that a poisoned hash read every few seconds is one line, not one
// a read. It is safe for concurrent use.
type Refusals struct {
	log   *zap.Logger
	count func(app string)

	mu     sync.Mutex
	logged map[string]string // Redis key → the writer whose refusal was logged last
}

// NewRefusals returns Refusals that log to log (nil: nowhere) and call count,
// when not nil, for every refusal, with the app (entry key) whose hash it is.
func NewRefusals(log *zap.Logger, count func(app string)) *Refusals {
	if log == nil {
		log = zap.NewNop()
	}
	return &Refusals{log: log, count: count, logged: make(map[string]string)}
}

// Note records what reading app's hash h gave: err nil for a hash read well
// (or absent), else why it was refused. A nil Refusals notes nothing.
func (r *Refusals) Note(app string, h map[string]string, err error) {
	r.note(AppKey(app), "redis entry refused, keeping what was known", app, h, err)
}

// NoteRefresh records what reading app's refresh request h gave, as Note: err
// nil for a request read well (or absent), else why it was ignored.
func (r *Refusals) NoteRefresh(app string, h map[string]string, err error) {
	r.note(RefreshKey(app), "redis refresh request refused, ignoring it", app, h, err)
}

// note is Note of the hash at key, logged as msg.
func (r *Refusals) note(key, msg, app string, h map[string]string, err error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.logged, key)
		return
	}
	if r.count != nil {
		r.count(app)
	}
	by := h[fieldBy]
	if w, ok := r.logged[key]; ok && w == by {
		return
	}
	r.logged[key] = by
	r.log.Warn(msg, zap.String("app", app), logsafe.String("by", by), logsafe.NamedError("err", err))
}
