package meta

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/outage"
	"github.com/storytold/craft-releases/pkg/release"
)

// Reader reads the renames and notices live at now; *DB is one.
type Reader interface {
	Live(ctx context.Context, now time.Time) (m release.Meta, skipped []string, err error)
}

// Publisher shares what a poller read at a time, refusing (false, nil) to
// overwrite a newer read; *store.Store is one.
type Publisher interface {
	PutMeta(ctx context.Context, m release.Meta, at time.Time) (bool, error)
}

// Refresher reads the live renames and notices from MySQL and publishes them
// to Redis, once at start and then every interval. When MySQL or Redis
// fails, what was last published stays in Redis and is served: the
// Refresher warns at most every 10 minutes and tries again at the next
// interval. Its methods are safe for concurrent use.
type Refresher struct {
	reader   Reader
	pub      Publisher
	interval time.Duration
	log      *zap.Logger
	now      func() time.Time

	mu        sync.Mutex // serialises refreshes; guards what follows
	published *release.Meta
	mysql     outage.Tracker
	redis     outage.Tracker

	skippedWarned time.Time // the last warning about rows left out
}

// NewRefresher returns a Refresher that reads from r and publishes to p every
// interval, a positive duration. now is the clock of the reads' times; nil
// is time.Now. A nil log discards logs.
func NewRefresher(r Reader, p Publisher, interval time.Duration, log *zap.Logger, now func() time.Time) (*Refresher, error) {
	switch {
	case r == nil || p == nil:
		return nil, errors.New("new refresher: a reader and a publisher are required")
	case interval <= 0:
		return nil, errors.New("new refresher: the interval must be positive")
	}
	if log == nil {
		log = zap.NewNop()
	}
	if now == nil {
		now = time.Now
	}
	return &Refresher{reader: r, pub: p, interval: interval, log: log, now: now}, nil
}

// Run refreshes at once and then every interval until ctx is cancelled, and
// returns nil. Failures are logged, never returned, so that a MySQL outage
// never stops the poller.
func (f *Refresher) Run(ctx context.Context) error {
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	for {
		_ = f.Refresh(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Refresh reads what is live now and publishes it, guarded by the read's
// time. It returns the read's or the publication's error, after logging it
// as Run would; a publication refused because another poller published a
// newer read is not an error. Refreshes are serialised.
func (f *Refresher) Refresh(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	at := f.now()
	m, skipped, err := f.reader.Live(ctx, at)
	took := f.now().Sub(at)
	if err != nil {
		if ctx.Err() == nil {
			f.mysql.Down(f.log, at, f.now(), "mysql read failed, serving the last published meta", zap.NamedError("err", err))
		}
		return err
	}
	f.mysql.Up(f.log, f.now(), "mysql is back")
	if len(skipped) > 0 && (f.skippedWarned.IsZero() || at.Sub(f.skippedWarned) >= outage.Every) {
		f.skippedWarned = at
		f.log.Warn("meta rows break the limits and are not published", zap.Strings("ids", skipped))
	}
	written, err := f.pub.PutMeta(ctx, m, at)
	if err != nil {
		if ctx.Err() == nil {
			f.redis.Down(f.log, at, f.now(), "redis write failed, meta not published", zap.NamedError("err", err))
		}
		return err
	}
	f.redis.Up(f.log, f.now(), "redis is back for the meta")
	level := zap.DebugLevel
	if written && (f.published == nil || !reflect.DeepEqual(*f.published, m)) {
		// A change is what people look for; the same lists every minute
		// are not.
		level = zap.InfoLevel
		f.published = &m
	}
	f.log.Log(level, "meta refreshed",
		zap.Bool("written", written),
		zap.Int("app_renames", len(m.AppRenames)),
		zap.Int("repo_renames", len(m.RepoRenames)),
		zap.Int("announcements", len(m.Notices.Announcements)),
		zap.Int("alerts", len(m.Notices.Alerts)),
		zap.Duration("took", took),
	)
	return nil
}
