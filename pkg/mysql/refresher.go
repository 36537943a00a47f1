package mysql

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/logsafe"
	"github.com/storytold/craft-releases/pkg/outage"
	"github.com/storytold/craft-releases/pkg/release"
)

// Reader reads the renames and notices live at now; *DB is one.
type Reader interface {
	Live(ctx context.Context, now time.Time) (m release.Bulletin, skipped []string, err error)
}

// Publisher shares what a poller read at a time, refusing (false, nil) to
// overwrite a newer read; *store.Store is one.
type Publisher interface {
	PutMeta(ctx context.Context, m release.Bulletin, at time.Time) (bool, error)
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
	clock    clock.Clock

	mu        sync.Mutex // serialises refreshes; guards what follows
	published *release.Bulletin
	mysql     outage.Tracker
	redis     outage.Tracker

	skippedWarned time.Time // the last warning about rows left out

	onPublish func(release.Bulletin) // nil: none
	wake      chan struct{}          // one pending Wake
}

// WakeSpacing is the least time between two refreshes that Wake brings
// about: a flood of wakes costs MySQL one read a second.
const WakeSpacing = time.Second

// A RefresherOption configures a Refresher.
type RefresherOption func(*Refresher)

// WithOnPublish makes the Refresher call f with each Bulletin it read from
// MySQL, right before publishing it, whatever Redis then does with it
// (written, refused for another poller's newer read, or failed): so that
// the poller follows the decisions MySQL holds (which apps have one) even
// while Redis is down. f is called from the refreshing goroutine, with
// refreshes serialised, and must not block.
func WithOnPublish(f func(release.Bulletin)) RefresherOption {
	return func(r *Refresher) { r.onPublish = f }
}

// NewRefresher returns a Refresher that reads from r and publishes to p every
// interval, a positive duration. clk gives the reads' times and paces Run;
// nil is clock.System. A nil log discards logs.
func NewRefresher(r Reader, p Publisher, interval time.Duration, log *zap.Logger, clk clock.Clock, opts ...RefresherOption) (*Refresher, error) {
	switch {
	case r == nil || p == nil:
		return nil, errors.New("new refresher: a reader and a publisher are required")
	case interval <= 0:
		return nil, errors.New("new refresher: the interval must be positive")
	}
	if log == nil {
		log = zap.NewNop()
	}
	f := &Refresher{reader: r, pub: p, interval: interval, log: log, clock: clock.Or(clk), wake: make(chan struct{}, 1)}
	for _, o := range opts {
		o(f)
	}
	return f, nil
}

// Run refreshes at once and then every interval until ctx is cancelled, and
// returns nil. The refreshes keep to the schedule of the first: one that
// takes longer than the interval skips the times it missed, as a ticker
// would. A Wake brings one more refresh, at least WakeSpacing after the
// last. Failures are logged, never returned, so that a MySQL outage never
// stops the poller.
func (f *Refresher) Run(ctx context.Context) error {
	next := f.clock.Now()
	for {
		last := f.clock.Now()
		_ = f.Refresh(ctx)
		now := f.clock.Now()
		for !next.After(now) {
			next = next.Add(f.interval)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-f.clock.After(next.Sub(now)):
		case <-f.wake:
			if wait := WakeSpacing - f.clock.Now().Sub(last); wait > 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-f.clock.After(wait):
				}
			}
			// The refresh that follows serves every wake so far.
			select {
			case <-f.wake:
			default:
			}
		}
	}
}

// Wake asks Run to refresh soon rather than at its next interval: an
// operator's decision was just written to MySQL. Wakes that arrive before
// that refresh are one. It never blocks.
func (f *Refresher) Wake() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Refresh reads what is live now and publishes it, guarded by the read's
// time. It returns the read's or the publication's error, after logging it
// as Run would; a publication refused because another poller published a
// newer read is not an error. Refreshes are serialised.
func (f *Refresher) Refresh(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	at := f.clock.Now()
	m, skipped, err := f.reader.Live(ctx, at)
	took := f.clock.Now().Sub(at)
	if err != nil {
		if ctx.Err() == nil {
			f.mysql.Down(f.log, at, f.clock.Now(), "mysql read failed, serving the last published meta", logsafe.NamedError("err", err))
		}
		return err
	}
	f.mysql.Up(f.log, f.clock.Now(), "mysql is back")
	if len(skipped) > 0 && (f.skippedWarned.IsZero() || at.Sub(f.skippedWarned) >= outage.Every) {
		f.skippedWarned = at
		f.log.Warn("meta rows break the limits and are not published", zap.Strings("ids", skipped))
	}
	if f.onPublish != nil {
		f.onPublish(m)
	}
	written, err := f.pub.PutMeta(ctx, m, at)
	if err != nil {
		if ctx.Err() == nil {
			f.redis.Down(f.log, at, f.clock.Now(), "redis write failed, meta not published", logsafe.NamedError("err", err))
		}
		return err
	}
	f.redis.Up(f.log, f.clock.Now(), "redis is back for the meta")
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
		zap.Int("decided_apps", len(m.Decisions)),
		zap.Duration("took", took),
	)
	return nil
}
