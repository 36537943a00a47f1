package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/redis/rueidis"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

// The webhook's fan-in (docs/operations.md, "GitHub webhook").
const (
	// deliveryTTL is how long a delivery id is remembered: the three days
	// for which GitHub offers to redeliver.
	deliveryTTL = 72 * time.Hour
	// refreshTTL is how long a refresh request lives without a poller.
	refreshTTL = schedule.RefreshLife
	// rescan is how often WatchRefreshes reads every request again, in case
	// an announcement was lost with a connection.
	rescan = 10 * time.Second
	// resubscribe is the wait before subscribing again after a failure.
	resubscribe = time.Second
)

const (
	fieldAtMS = "at_ms"
	fieldTag  = "tag"
)

// Deliver records a webhook delivery under each of ids (its body's hash,
// then its delivery id) for three days and, unless one of them was recorded
// before, each of refreshes, by entry key (a hash with a TTL of an hour,
// replacing the entry's earlier request), announced on RefreshChannel.
// It reports whether the delivery was new; a duplicate leaves nothing behind
// (ids are tried in order, and those it recorded are forgotten). When the
// requests cannot be recorded it forgets the ids it recorded, so that
// GitHub's redelivery is not taken for a duplicate, and returns the error.
func (s *Store) Deliver(ctx context.Context, ids []string, refreshes map[string]release.Refresh) (bool, error) {
	if len(ids) == 0 {
		return false, errors.New("deliver: no delivery id")
	}
	id := ids[0]
	keys := slices.Sorted(maps.Keys(refreshes))
	var at time.Time // the delivery's arrival: the latest of its requests
	for _, k := range keys {
		if refreshes[k].At.IsZero() {
			return false, fmt.Errorf("deliver %s: %s: %w", id, k, errNoTime)
		}
		if refreshes[k].At.After(at) {
			at = refreshes[k].At
		}
	}
	if at.IsZero() {
		return false, fmt.Errorf("deliver %s: %w", id, errNoTime)
	}
	ctx, cancel := context.WithTimeout(ctx, s.conn.Timeout())
	defer cancel()
	c, err := s.conn.Client(ctx)
	if err != nil {
		return false, fmt.Errorf("deliver %s: %w", id, err)
	}
	// One id at a time, in order: a duplicate (the body's hash comes first)
	// costs one command and leaves no key behind.
	var made []string // the keys this call created
	for _, d := range ids {
		k := DeliveryKey(d)
		err := c.Do(ctx, c.B().Set().Key(k).Value(ms(at)).Nx().Px(deliveryTTL).Build()).Error()
		if err != nil {
			s.forget(ctx, c, made)
			if rueidis.IsRedisNil(err) {
				return false, nil
			}
			return false, fmt.Errorf("deliver %s: %w", id, err)
		}
		made = append(made, k)
	}
	if err := s.request(ctx, c, keys, refreshes); err != nil {
		s.forget(ctx, c, made)
		return false, fmt.Errorf("deliver %s: %w", id, err)
	}
	return true, nil
}

// Request records refreshes (entry key → request, each with a time) as
// Deliver does, without a delivery to tell apart from a redelivery, and
// announces them: what an operator's verb asks of the pollers.
func (s *Store) Request(ctx context.Context, refreshes map[string]release.Refresh) error {
	keys := slices.Sorted(maps.Keys(refreshes))
	for _, k := range keys {
		if refreshes[k].At.IsZero() {
			return fmt.Errorf("request %s: %w", k, errNoTime)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.conn.Timeout())
	defer cancel()
	c, err := s.conn.Client(ctx)
	if err == nil {
		err = s.request(ctx, c, keys, refreshes)
	}
	if err != nil {
		return fmt.Errorf("request refresh: %w", err)
	}
	return nil
}

// request writes the refresh requests of keys, each in a MULTI/EXEC of its
// own, then announces each on RefreshChannel, in one pipeline.
func (s *Store) request(ctx context.Context, c rueidis.Client, keys []string, refreshes map[string]release.Refresh) error {
	var cmds rueidis.Commands
	for _, app := range keys {
		k, r := RefreshKey(app), refreshes[app]
		cmds = append(cmds,
			c.B().Multi().Build(),
			c.B().Del().Key(k).Build(),
			hset(c.B(), k, []string{fieldV, formatVersion, fieldAtMS, ms(r.At), fieldTag, r.Tag, fieldBy, s.by}),
			c.B().Pexpire().Key(k).Milliseconds(refreshTTL.Milliseconds()).Build(),
			c.B().Exec().Build(),
		)
	}
	for _, app := range keys {
		cmds = append(cmds, c.B().Publish().Channel(RefreshChannel).Message(app).Build())
	}
	for _, res := range c.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			return err
		}
	}
	return nil
}

// forget deletes keys, best effort, with a deadline of its own: ctx may be
// what ran out.
func (s *Store) forget(ctx context.Context, c rueidis.Client, keys []string) {
	if len(keys) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.conn.Timeout())
	defer cancel()
	cmds := make(rueidis.Commands, len(keys))
	for i, k := range keys {
		cmds[i] = c.B().Del().Key(k).Build()
	}
	c.DoMulti(ctx, cmds...)
}

// Refreshes reads the pending refresh request of each of apps in one
// pipeline, bounded as every hash (ReadBounded). Apps without one (or with an
// unreadable one) are left out; a request with a field over its bound is
// left unread and told to the Store's Refusals (docs/operations.md, "A
// refresh request refused").
func (s *Store) Refreshes(ctx context.Context, apps []string) (map[string]release.Refresh, error) {
	ctx, cancel := context.WithTimeout(ctx, s.conn.Timeout())
	defer cancel()
	c, err := s.conn.Client(ctx)
	if err != nil {
		return nil, fmt.Errorf("read refreshes: %w", err)
	}
	reads := make([]HashFields, len(apps))
	for i, app := range apps {
		reads[i] = HashFields{Key: RefreshKey(app), Fields: refreshFields}
	}
	hashes, err := ReadBounded(ctx, c, reads)
	if err != nil {
		return nil, fmt.Errorf("read refreshes: %w", err)
	}
	out := make(map[string]release.Refresh)
	for i, b := range hashes {
		over := b.Err()
		s.refusals.NoteRefresh(apps[i], b.Hash, over)
		if over != nil {
			continue
		}
		if r, ok := DecodeRefresh(b.Hash, s.clock.Now()); ok {
			out[apps[i]] = r
		}
	}
	return out, nil
}

// DecodeRefresh reads a refresh hash (nil for no key) as DecodeApp reads an
// app hash at now; ok is false when it holds no readable request, or one
// dated more than release.MaxSkew ahead of now, which no honest writer
// made and which would otherwise stand for ever.
func DecodeRefresh(h map[string]string, now time.Time) (release.Refresh, bool) {
	if h[fieldV] != formatVersion {
		return release.Refresh{}, false
	}
	at, ok := millis(h[fieldAtMS])
	if !ok || !release.Believed(at, now) {
		return release.Refresh{}, false
	}
	return release.Refresh{At: at, Tag: h[fieldTag]}, true
}

// WatchRefreshes calls fn with every pending refresh request of apps until
// ctx ends, then returns nil: those Redis holds when it starts and each time
// it subscribes again, each one announced on RefreshChannel as it comes, and
// all of them every 10 s in case an announcement was lost. fn may be called
// again with a request it was given before, and must not block for long.
// Redis trouble is retried, never returned; onErr, when not nil, is told
// about each failure that is not ctx's own end. It returns once the
// goroutine it subscribes with has ended.
func (s *Store) WatchRefreshes(ctx context.Context, apps []string, fn func(app string, r release.Refresh), onErr func(error)) error {
	known := make(map[string]bool, len(apps))
	for _, a := range apps {
		known[a] = true
	}
	announced := make(chan string, 64)
	subscribed := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.subscribe(ctx, subscribed, announced, onErr)
	}()
	defer func() { <-done }()
	scan := func(keys []string) {
		pending, err := s.Refreshes(ctx, keys)
		if err != nil {
			if ctx.Err() == nil && onErr != nil {
				onErr(err)
			}
			return
		}
		for _, app := range keys {
			if r, ok := pending[app]; ok {
				fn(app, r)
			}
		}
	}
	scan(apps)
	tick := s.clock.After(rescan)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-subscribed:
			scan(apps)
		case <-tick:
			scan(apps)
			tick = s.clock.After(rescan)
		case app := <-announced:
			if known[app] {
				scan([]string{app})
			}
		}
	}
}

// subscribe listens on RefreshChannel until ctx ends, passing each message
// to announced (dropping it when full: the rescan catches up), and signals
// subscribed whenever a subscription is (re)made.
func (s *Store) subscribe(ctx context.Context, subscribed chan<- struct{}, announced chan<- string, onErr func(error)) {
	for ctx.Err() == nil {
		c, err := s.conn.Client(ctx)
		if err == nil {
			err = c.Receive(ctx, c.B().Subscribe().Channel(RefreshChannel).Build(), func(m rueidis.PubSubMessage) {
				select {
				case announced <- m.Message:
				default:
				}
			})
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil && !errors.Is(err, rueidis.ErrClosing) && onErr != nil {
			onErr(fmt.Errorf("subscribe %s: %w", RefreshChannel, err))
		}
		select {
		case subscribed <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done():
		case <-s.clock.After(resubscribe):
		}
	}
}
