// Package cloudflare purges what changed from Cloudflare's cache: a Purger
// queues the paths of the answers a release changed and sends them, as
// public URLs, to Cloudflare's purge-by-URL API (docs/operations.md,
// "Cloudflare"), batched, rate-bounded and retried, without ever holding up
// the caller.
package cloudflare

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/logsafe"
	"github.com/storytold/craft-releases/pkg/outage"
	"github.com/storytold/craft-releases/pkg/secret"
)

// MaxFiles is how many URLs one purge call names at most: the per-call limit
// of purge by URL that Cloudflare documents for zones on the Free, Pro and
// Business plans (30; 500 on Enterprise). Its newer limits page gives 100
// operations a request on every plan; 30 fits both.
const MaxFiles = 30

// The Purger's defaults, for Config fields left zero.
const (
	// DefaultDelay is how long after a change its purge waits, so that every
	// API pod serves the change first: a pod hydrates a write in
	// milliseconds, and within a second when Redis refused client tracking
	// and it re-reads every second. A purge sent before a pod serves the
	// change would let the edge cache the old answer again.
	DefaultDelay = time.Second
	// DefaultInterval and DefaultBurst bound the calls: at most 5 in any
	// minute (burst × interval), the Free plan's 5 purge requests a minute,
	// the lowest of Cloudflare's limits.
	DefaultInterval = 12 * time.Second
	DefaultBurst    = 5
	// DefaultAttempts bounds the tries of one batch; the waits between them
	// double from 1 s up to 1 minute (1, 2, 4, 8, 16, 32, 60, 60 s: about
	// 3 minutes in all), after which the batch is dropped and logged: by
	// then the answers' max-age has replaced what it named anyway.
	DefaultAttempts = 9
	// MaxPending bounds the URLs waiting to be sent; beyond it a change's
	// URLs are dropped and counted.
	MaxPending = 10 * MaxFiles
	// MaxExcerpt bounds what a failure's log line quotes of Cloudflare's
	// answer, in bytes: room for its first error's code and message.
	MaxExcerpt = 200
)

// The outcomes an Observer is told of.
const (
	Purged  = "purged"  // a call Cloudflare accepted
	Failed  = "failed"  // a call that failed; it is retried
	Dropped = "dropped" // a batch given up after its last attempt, or URLs over MaxPending
)

// Observer is told what the Purger does, for metrics. Its methods are called
// from the Purger's goroutines and must not block.
type Observer interface {
	// Purge reports one call (Purged or Failed) of files URLs, or files URLs
	// Dropped.
	Purge(outcome string, files int)
	// Delay reports, for each change that a Purged call covered, the time
	// from the change to Cloudflare's answer.
	Delay(d time.Duration)
}

// Config is what a Purger needs. APIURL, Zone, Token and PublicURL are
// required; the rest may be left zero.
type Config struct {
	APIURL    string        // Cloudflare's API, ending with "/": https://api.cloudflare.com/client/v4/
	Zone      string        // the zone's id
	Token     secret.String // an API token with the zone's Cache Purge permission
	PublicURL string        // the service's public origin, without a trailing "/": https://api.example.com

	Client   *http.Client  // nil: one with a 10 s timeout; its CheckRedirect is replaced: redirects are refused
	Delay    time.Duration // wait after a change before its purge; 0: DefaultDelay, negative: none
	Interval time.Duration // at most Burst calls in any Burst × Interval; 0: DefaultInterval
	Burst    int           // 0: DefaultBurst
	Attempts int           // tries per batch; 0: DefaultAttempts
	Observer Observer      // nil: none
	Logger   *zap.Logger   // nil: no logging
	Clock    clock.Clock   // nil: clock.System
}

// Purger sends purges of the paths it is given. Create it with New; Purge is
// safe for concurrent use, and Run must run for anything to be sent.
type Purger struct {
	endpoint string
	token    secret.String
	public   string
	client   *http.Client
	delay    time.Duration
	interval time.Duration
	burst    int
	attempts int
	obs      Observer
	log      *zap.Logger
	clock    clock.Clock

	wake chan struct{} // one pending signal: something was queued
	sent []time.Time   // the last calls, at most burst: Run's alone

	mu      sync.Mutex
	pending []string             // URLs in the order queued, each once
	since   map[string]time.Time // pending URL → when its change was first queued
	first   time.Time            // when the oldest pending URL was queued; zero: none pending
	last    time.Time            // when a change was last queued
	full    outage.Tracker       // URLs dropped over MaxPending, until the queue is empty again
	lost    int                  // URLs dropped since full began
}

// maxHold is how many Delays a purge may wait for changes that keep coming:
// each change waits a whole Delay after the last one, up to this.
const maxHold = 3

// New returns a Purger for c. It fails when a required field is empty.
func New(c Config) (*Purger, error) {
	switch {
	case c.APIURL == "", !strings.HasSuffix(c.APIURL, "/"):
		return nil, fmt.Errorf("new purger: api url %q: must end with /", c.APIURL)
	case c.Zone == "":
		return nil, errors.New("new purger: no zone")
	case c.Token == "":
		return nil, errors.New("new purger: no token")
	case c.PublicURL == "" || strings.HasSuffix(c.PublicURL, "/"):
		return nil, fmt.Errorf("new purger: public url %q: must be set, without a trailing /", c.PublicURL)
	}
	p := &Purger{
		endpoint: c.APIURL + "zones/" + c.Zone + "/purge_cache",
		token:    c.Token,
		public:   c.PublicURL,
		client:   c.Client,
		delay:    c.Delay,
		interval: c.Interval,
		burst:    c.Burst,
		attempts: c.Attempts,
		obs:      c.Observer,
		log:      c.Logger,
		clock:    clock.Or(c.Clock),
		wake:     make(chan struct{}, 1),
		since:    make(map[string]time.Time),
	}
	if p.client == nil {
		p.client = &http.Client{Timeout: 10 * time.Second}
	}
	// Go would follow a redirect with the token to another port or scheme
	// of the same host: none is followed, its 3xx is a failed call.
	client := *p.client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	p.client = &client
	switch {
	case p.delay == 0:
		p.delay = DefaultDelay
	case p.delay < 0:
		p.delay = 0
	}
	if p.interval <= 0 {
		p.interval = DefaultInterval
	}
	if p.burst <= 0 {
		p.burst = DefaultBurst
	}
	if p.attempts <= 0 {
		p.attempts = DefaultAttempts
	}
	if p.obs == nil {
		p.obs = nopObserver{}
	}
	if p.log == nil {
		p.log = zap.NewNop()
	}
	return p, nil
}

// Purge queues the public URLs of paths (each starting with "/", a query
// allowed) for the next purge. It never blocks: Run sends them, after the
// Delay. A URL already waiting is not queued twice; URLs beyond MaxPending
// are dropped and counted, and logged as an outage.Tracker does: a warning
// at most every outage.Every while URLs are dropped, one line once the
// queue is empty again.
func (p *Purger) Purge(paths []string) {
	now := p.clock.Now()
	dropped := 0
	p.mu.Lock()
	for _, path := range paths {
		u := p.public + path
		if _, ok := p.since[u]; ok {
			continue
		}
		if len(p.pending) >= MaxPending {
			dropped++
			continue
		}
		p.pending = append(p.pending, u)
		p.since[u] = now
	}
	if p.first.IsZero() {
		p.first = now
	}
	p.last = now
	if dropped > 0 {
		p.lost += dropped
		p.full.Down(p.log, now, now, "cloudflare purge queue full, urls dropped", zap.Int("urls", p.lost))
	}
	p.mu.Unlock()
	if dropped > 0 {
		p.obs.Purge(Dropped, dropped)
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run sends what Purge queued until ctx is cancelled, then returns nil: it
// waits until a whole Delay has passed since the last change (at most
// maxHold Delays since the oldest waiting), then sends every URL waiting in calls of
// at most MaxFiles, at the bounded rate, each retried with backoff up to
// its attempts. Failures are logged and counted, never returned. Call it
// once.
func (p *Purger) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-p.wake:
		}
		for {
			// Again before each call: what was queued while the last one
			// was sent waits its Delay too.
			if !p.hold(ctx) {
				return nil
			}
			batch, since := p.take()
			if len(batch) == 0 {
				break
			}
			if !p.send(ctx, batch, since) {
				return nil
			}
		}
	}
}

// pace waits until a call keeps within the rate: at most burst calls in any
// burst × interval (5 a minute by default), and reports false when ctx was
// cancelled first. Only Run's goroutine calls it.
func (p *Purger) pace(ctx context.Context) bool {
	if len(p.sent) == p.burst {
		if !p.sleep(ctx, p.sent[0].Add(time.Duration(p.burst)*p.interval).Sub(p.clock.Now())) {
			return false
		}
		p.sent = p.sent[1:]
	}
	p.sent = append(p.sent, p.clock.Now())
	return true
}

// hold waits until a whole Delay has passed since the last change queued,
// so that every pod serves each change before its purge, or maxHold Delays
// since the oldest pending one, so that a stream of changes cannot hold the
// purge back for ever. It reports false when ctx was cancelled first.
func (p *Purger) hold(ctx context.Context) bool {
	for {
		p.mu.Lock()
		until := p.last.Add(p.delay)
		if most := p.first.Add(maxHold * p.delay); until.After(most) {
			until = most
		}
		p.mu.Unlock()
		wait := until.Sub(p.clock.Now())
		if wait <= 0 {
			return ctx.Err() == nil
		}
		if !p.sleep(ctx, wait) {
			return false
		}
	}
}

// take removes up to MaxFiles URLs from the queue, and returns them with the
// time each one's change was queued.
func (p *Purger) take() ([]string, []time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := min(len(p.pending), MaxFiles)
	batch := p.pending[:n:n]
	p.pending = p.pending[n:]
	since := make([]time.Time, n)
	for i, u := range batch {
		since[i] = p.since[u]
		delete(p.since, u)
	}
	if len(p.pending) == 0 {
		p.first = time.Time{}
		p.full.Up(p.log, p.clock.Now(), "cloudflare purge queue drained", zap.Int("urls", p.lost))
		p.lost = 0
	}
	return batch, since
}

// send purges batch, retrying with backoff, and reports false when ctx was
// cancelled first.
func (p *Purger) send(ctx context.Context, batch []string, since []time.Time) bool {
	wait := time.Second
	for attempt := 1; ; attempt++ {
		if !p.pace(ctx) {
			return false
		}
		start := p.clock.Now()
		err := p.call(ctx, batch)
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			now := p.clock.Now()
			p.obs.Purge(Purged, len(batch))
			seen := map[time.Time]bool{}
			for _, t := range since {
				if !seen[t] {
					seen[t] = true
					p.obs.Delay(now.Sub(t))
				}
			}
			p.log.Info("cloudflare purge", zap.Int("urls", len(batch)), zap.Int("attempt", attempt),
				zap.Duration("took", now.Sub(start)), zap.Duration("since_change", now.Sub(since[0])))
			return true
		}
		p.obs.Purge(Failed, len(batch))
		if attempt >= p.attempts {
			p.obs.Purge(Dropped, len(batch))
			p.log.Error("cloudflare purge failed, giving up", zap.Int("urls", len(batch)),
				zap.Int("attempts", attempt), logsafe.NamedError("err", err))
			return true
		}
		p.log.Warn("cloudflare purge failed", zap.Int("urls", len(batch)), zap.Int("attempt", attempt),
			zap.Duration("retry_in", wait), logsafe.NamedError("err", err))
		if !p.sleep(ctx, wait) {
			return false
		}
		wait = min(2*wait, time.Minute)
	}
}

// call makes one purge call of files. Its error says nothing of the answer
// but its status and an excerpt (secret.Excerpt, MaxExcerpt bytes, the
// token and anything token-shaped removed), since Cloudflare, or whatever
// answers in its place, may echo the token in any spelling.
func (p *Purger) call(ctx context.Context, files []string) error {
	body, err := json.Marshal(struct {
		Files []string `json:"files"`
	}{files})
	if err != nil {
		return fmt.Errorf("purge: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("purge: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+p.token.Reveal())
	req.Header.Set("Content-Type", "application/json")
	res, err := p.client.Do(req)
	if err != nil {
		// The URL is the endpoint, known; the rest may quote the answer
		// (a malformed status line).
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("purge: %s", secret.Excerpt([]byte(err.Error()), MaxExcerpt, p.token.Reveal()))
	}
	defer res.Body.Close()
	// Cloudflare's answer is small; more is not read.
	body, readErr := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	var answer struct {
		Success bool `json:"success"`
	}
	if res.StatusCode == http.StatusOK && readErr == nil && json.Unmarshal(body, &answer) == nil && answer.Success {
		return nil
	}
	if res.StatusCode >= 300 && res.StatusCode < 400 {
		return fmt.Errorf("purge: status %d, a redirect, not followed", res.StatusCode)
	}
	return fmt.Errorf("purge: status %d, answer %s", res.StatusCode, secret.Excerpt(body, MaxExcerpt, p.token.Reveal()))
}

// sleep waits d, and reports false when ctx was cancelled first.
func (p *Purger) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-p.clock.After(d):
		return ctx.Err() == nil
	}
}

type nopObserver struct{}

func (nopObserver) Purge(string, int)   {}
func (nopObserver) Delay(time.Duration) {}
