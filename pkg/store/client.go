package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/zap"
)

// The poller's client (redis.md, "The poller's client").
const (
	connectTimeout = 3 * time.Second
	defaultTimeout = 5 * time.Second
)

// An Option adjusts NewClient or New.
type Option func(*settings)

type settings struct {
	timeout time.Duration
	log     *zap.Logger
	tls     *tls.Config
}

func newSettings(opts []Option) settings {
	s := settings{timeout: defaultTimeout, log: zap.NewNop()}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// WithTimeout sets how long one Redis call may take, 5 s unless set: for New,
// the deadline of every call of the Store; for NewClient, the limit on every
// read and write of a connection, health pings included. A d <= 0 keeps the
// default.
func WithTimeout(d time.Duration) Option {
	return func(s *settings) {
		if d > 0 {
			s.timeout = d
		}
	}
}

// WithLogger gives New a logger for the one warning a Store ever logs: that
// Redis refused the guarded-write script and writes go through
// WATCH/MULTI/EXEC from then on. A nil log keeps the default, no logging.
func WithLogger(log *zap.Logger) Option {
	return func(s *settings) {
		if log != nil {
			s.log = log
		}
	}
}

// WithTLS gives NewClient the trust and client certificate of a rediss://
// URL: extra's RootCAs, when set, replace the system roots for Redis, and its
// Certificates are offered to a server that asks for one (MergeTLS). It
// changes nothing for a redis:// URL, nor with a nil extra; New ignores it.
func WithTLS(extra *tls.Config) Option {
	return func(s *settings) { s.tls = extra }
}

// MergeTLS returns parsed, the TLS settings rueidis.ParseURL made of a
// rediss:// URL (its server name, its skip_verify), with the RootCAs and
// Certificates of extra, as a copy; parsed itself when either is nil (a
// redis:// URL, no extra settings).
func MergeTLS(parsed, extra *tls.Config) *tls.Config {
	if parsed == nil || extra == nil {
		return parsed
	}
	merged := parsed.Clone()
	if extra.RootCAs != nil {
		merged.RootCAs = extra.RootCAs
	}
	if len(extra.Certificates) > 0 {
		merged.Certificates = extra.Certificates
	}
	return merged
}

// ScrubURLError returns err, a failure to parse rawURL, without anything that
// could quote a password: net/url quotes the whole URL, and a password holding
// a '/' even splits into the host and port it complains about.
func ScrubURLError(rawURL string, err error) error {
	if strings.Contains(rawURL, "@") {
		return errors.New("malformed url with credentials")
	}
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// NewClient returns the poller's own Redis client for redisURL, read by
// rueidis.ParseURL (redis://, rediss:// for TLS, several addr= for a
// cluster). Whatever the URL says, the client is small (one pipelined
// connection and one for transactions per node), gives a connection 3 s to
// dial and up to 3 s more for its handshake, gives up on any read or write, health pings included, after 5 s (see
// WithTimeout), fails a call at once when Redis refuses the connection
// (rather than retrying it until the call's deadline), and does no
// client-side caching, so it works on servers without CLIENT TRACKING.
//
// NewClient does not connect: the first command does, so a Redis that is
// down when the poller starts only fails commands until it is back. Until a
// connection succeeds, B returns a builder for a single Redis and Mode guesses
// from the URL; a command built that way before the client found a cluster
// fails once, and is to be built again. A Store always builds its commands
// once connected.
//
// rueidis retries a read-only command after a network error other than a
// refused connection until its context ends, so every call needs a
// deadline; a Store gives each one.
//
// The only error is a URL that does not parse; it never includes the URL's
// password. The client is safe for concurrent use; Close it when done.
func NewClient(redisURL string, opts ...Option) (rueidis.Client, error) {
	set := newSettings(opts)
	opt, err := rueidis.ParseURL(redisURL)
	if err != nil {
		return nil, fmt.Errorf("parse redis url: %w", ScrubURLError(redisURL, err))
	}
	opt.TLSConfig = MergeTLS(opt.TLSConfig, set.tls)
	opt.Dialer.Timeout = connectTimeout
	opt.ConnWriteTimeout = set.timeout
	opt.DisableCache = true
	// No CLIENT SETINFO: PollerACL does not grant it (acl.go).
	opt.ClientSetInfo = rueidis.DisableClientSetInfo
	// A negative multiplex is one pipelined connection per node (zero would
	// let rueidis pick up to four); the blocking pool serves Dedicated.
	opt.PipelineMultiplex = -1
	opt.BlockingPoolSize = 1
	opt.RetryDelay = retryDelay
	return newLazyClient(opt), nil
}

// retryDelay is how long rueidis waits before it retries a read that failed
// on the network: rueidis's own exponential backoff up to a second, except
// after a refused connection, which fails the call at once. A Redis that is
// stopped or restarting refuses every dial, and retrying it until the call's
// deadline would stretch every tick of a poller to that deadline; a silent
// Redis is still bounded by the timeout.
func retryDelay(attempts int, _ rueidis.Completed, err error) time.Duration {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return -1
	}
	base := time.Microsecond << min(attempts, 20)
	return min(time.Second, base+rand.N(base))
}

// Refused reports whether err is Redis refusing the client for its
// configuration rather than Redis being unavailable: the credentials
// (WRONGPASS, NOAUTH, another authentication error) or the user's permissions
// (NOPERM). A refused connection, a timeout or a server that went away is an
// outage, not a refusal.
func Refused(err error) bool {
	var re *rueidis.RedisError
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	for _, prefix := range []string{"WRONGPASS", "NOAUTH", "NOPERM"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	// Older servers and proxies: "ERR invalid password", "ERR AUTH <password>
	// called without any password configured", "ERR Client sent AUTH, but no
	// password is set".
	lower := strings.ToLower(msg)
	return strings.HasPrefix(lower, "err") && (strings.Contains(lower, "auth") || strings.Contains(lower, "password"))
}

// errNotDialed is the placeholder client's only answer; it is never returned.
var errNotDialed = errors.New("placeholder: never dials")

// errBuiltTooEarly is returned for a command built by a lazyClient before it
// connected to what turned out to be a cluster.
var errBuiltTooEarly = errors.New("redis command built before the client found a cluster; build it again")

// lazyClient is a rueidis.Client that creates the real client on first use
// and keeps it from then on (rueidis reconnects it by itself).
type lazyClient struct {
	opt         rueidis.ClientOption
	placeholder rueidis.Builder
	noSlot      uint16 // the key-slot bit of commands built by placeholder

	real atomic.Pointer[rueidis.Client]

	mu      sync.Mutex
	dialing chan struct{} // closed when the connection attempt in flight ends
	lastErr error         // of the last attempt
	closed  bool
}

func newLazyClient(opt rueidis.ClientOption) *lazyClient {
	b := singleBuilder()
	probe := b.Arbitrary("PING").Build()
	return &lazyClient{opt: opt, placeholder: b, noSlot: probe.Slot()}
}

// singleBuilder returns the command builder of a single-node rueidis client.
// rueidis only hands builders out through clients, so it makes one that never
// dials and closes it.
func singleBuilder() rueidis.Builder {
	c, _ := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{"placeholder:0"},
		ForceSingleClient: true,
		DisableCache:      true,
		DialCtxFn: func(context.Context, string, *net.Dialer, *tls.Config) (net.Conn, error) {
			return nil, errNotDialed
		},
	})
	defer c.Close()
	return c.B()
}

// connect returns the real client, creating it if needed. Only one attempt
// runs at a time; callers wait for it until ctx ends.
func (l *lazyClient) connect(ctx context.Context) (rueidis.Client, error) {
	if c := l.real.Load(); c != nil {
		return *c, nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, rueidis.ErrClosing
	}
	if c := l.real.Load(); c != nil {
		l.mu.Unlock()
		return *c, nil
	}
	if l.dialing == nil {
		l.dialing = make(chan struct{})
		go l.dial(l.dialing)
	}
	done := l.dialing
	l.mu.Unlock()

	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-done:
	}
	if c := l.real.Load(); c != nil {
		return *c, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return nil, l.lastErr
}

// dial makes one attempt. It is bounded by the connect timeout and, for a
// cluster's first topology read, by the connection timeout, so it needs no
// context of its own.
func (l *lazyClient) dial(done chan struct{}) {
	c, err := rueidis.NewClient(l.opt)
	if err != nil && c != nil {
		c.Close()
		c = nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c != nil && l.closed {
		c.Close()
		c, err = nil, rueidis.ErrClosing
	}
	if c != nil {
		l.real.Store(&c)
	}
	l.lastErr = err
	l.dialing = nil
	close(done)
}

// tooEarly reports whether cmd, built by the placeholder, cannot go to c.
func (l *lazyClient) tooEarly(c rueidis.Client, slot uint16) bool {
	return slot&l.noSlot != 0 && c.Mode() == rueidis.ClientModeCluster
}

func (l *lazyClient) B() rueidis.Builder {
	if c := l.real.Load(); c != nil {
		return (*c).B()
	}
	return l.placeholder
}

func (l *lazyClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c, err := l.connect(ctx)
	if err != nil {
		return rueidis.NewErrorResult(err)
	}
	if l.tooEarly(c, cmd.Slot()) {
		return rueidis.NewErrorResult(errBuiltTooEarly)
	}
	return c.Do(ctx, cmd)
}

func (l *lazyClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c, err := l.connect(ctx)
	if err == nil {
		for i := range multi {
			if l.tooEarly(c, multi[i].Slot()) {
				err = errBuiltTooEarly
				break
			}
		}
	}
	if err != nil {
		return errorResults(len(multi), err)
	}
	return c.DoMulti(ctx, multi...)
}

func (l *lazyClient) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	c, err := l.connect(ctx)
	if err != nil {
		return rueidis.NewErrorResult(err)
	}
	if l.tooEarly(c, cmd.Slot()) {
		return rueidis.NewErrorResult(errBuiltTooEarly)
	}
	return c.DoCache(ctx, cmd, ttl)
}

func (l *lazyClient) DoMultiCache(ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult {
	c, err := l.connect(ctx)
	if err == nil {
		for i := range multi {
			if l.tooEarly(c, multi[i].Cmd.Slot()) {
				err = errBuiltTooEarly
				break
			}
		}
	}
	if err != nil {
		return errorResults(len(multi), err)
	}
	return c.DoMultiCache(ctx, multi...)
}

func (l *lazyClient) DoStream(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResultStream {
	c, err := l.connect(ctx)
	if err == nil && l.tooEarly(c, cmd.Slot()) {
		err = errBuiltTooEarly
	}
	if err != nil {
		return rueidis.NewErrorResultStream(err)
	}
	return c.DoStream(ctx, cmd)
}

func (l *lazyClient) DoMultiStream(ctx context.Context, multi ...rueidis.Completed) rueidis.MultiRedisResultStream {
	c, err := l.connect(ctx)
	if err == nil {
		for i := range multi {
			if l.tooEarly(c, multi[i].Slot()) {
				err = errBuiltTooEarly
				break
			}
		}
	}
	if err != nil {
		return rueidis.NewErrorResultStream(err)
	}
	return c.DoMultiStream(ctx, multi...)
}

func (l *lazyClient) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(msg rueidis.PubSubMessage)) error {
	c, err := l.connect(ctx)
	if err != nil {
		return err
	}
	if l.tooEarly(c, subscribe.Slot()) {
		return errBuiltTooEarly
	}
	return c.Receive(ctx, subscribe, fn)
}

// Dedicated connects first if needed; the attempt is bounded by itself.
func (l *lazyClient) Dedicated(fn func(rueidis.DedicatedClient) error) error {
	c, err := l.connect(context.Background())
	if err != nil {
		return err
	}
	return c.Dedicated(fn)
}

// Dedicate connects first if needed; when that fails, every command of the
// returned client fails with the connection error.
func (l *lazyClient) Dedicate() (rueidis.DedicatedClient, func()) {
	c, err := l.connect(context.Background())
	if err != nil {
		return failedDedicated{b: l.placeholder, err: err}, func() {}
	}
	return c.Dedicate()
}

// Nodes returns the real client's nodes, or none before it connected.
func (l *lazyClient) Nodes() map[string]rueidis.Client {
	if c := l.real.Load(); c != nil {
		return (*c).Nodes()
	}
	return map[string]rueidis.Client{}
}

// Mode returns the real client's mode or, before it connected, the mode the
// URL suggests.
func (l *lazyClient) Mode() rueidis.ClientMode {
	if c := l.real.Load(); c != nil {
		return (*c).Mode()
	}
	switch {
	case l.opt.Sentinel.MasterSet != "":
		return rueidis.ClientModeSentinel
	case len(l.opt.InitAddress) > 1:
		return rueidis.ClientModeCluster
	}
	return rueidis.ClientModeStandalone
}

// Close closes the real client; an attempt still in flight closes what it
// makes.
func (l *lazyClient) Close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	if c := l.real.Load(); c != nil {
		(*c).Close()
	}
}

// failedDedicated is the DedicatedClient of a lazyClient that could not connect.
type failedDedicated struct {
	b   rueidis.Builder
	err error
}

func (f failedDedicated) B() rueidis.Builder { return f.b }

func (f failedDedicated) Do(context.Context, rueidis.Completed) rueidis.RedisResult {
	return rueidis.NewErrorResult(f.err)
}

func (f failedDedicated) DoMulti(_ context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	return errorResults(len(multi), f.err)
}

func (f failedDedicated) Receive(context.Context, rueidis.Completed, func(rueidis.PubSubMessage)) error {
	return f.err
}

func (f failedDedicated) SetPubSubHooks(rueidis.PubSubHooks) <-chan error { return f.errs() }

func (f failedDedicated) SetOnInvalidations(func([]rueidis.RedisMessage)) <-chan error {
	return f.errs()
}

func (f failedDedicated) Close() {}

func (f failedDedicated) errs() <-chan error {
	ch := make(chan error, 1)
	ch <- f.err
	close(ch)
	return ch
}

// errorResults is n results that all fail with err.
func errorResults(n int, err error) []rueidis.RedisResult {
	res := make([]rueidis.RedisResult, n)
	for i := range res {
		res[i] = rueidis.NewErrorResult(err)
	}
	return res
}
