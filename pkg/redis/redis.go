// Package redis is the one way the service connects to Redis (docs/redis.md,
// "Clients and timeouts"): REDIS_URL parsed once into Options, the timeouts,
// TLS and the password kept out of what is printed, and every client built
// from them: the poller's Conn, which connects on first use, and NewClient,
// the API's client-side-cached one. pkg/redis/store and pkg/redis/hydrate
// take what it builds.
package redis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"github.com/storytold/craft-releases/pkg/secret"
)

// The timeouts of every client, unless the URL's dial_timeout and
// write_timeout (as rueidis.ParseURL reads them) set others.
const (
	connectTimeout = 3 * time.Second // dial, then again the handshake, of one connection
	callTimeout    = 5 * time.Second // one call, health pings included
)

// badURL is the one message for a REDIS_URL that does not parse. It quotes
// nothing: what is wrong may be a password holding a character that must be
// percent-encoded, and a piece of it would then show as a host, a port or a
// database.
const badURL = "not a valid URL (want redis://[user:password@]host:port[/db], with any of @ / ? # % : in the user or password percent-encoded)"

// Options are a parsed REDIS_URL. They print nothing of the password.
type Options struct {
	opt rueidis.ClientOption
}

// Parse reads rawURL as rueidis.ParseURL does (redis://, rediss:// for TLS,
// several addr= for a cluster, master_set= for Sentinel). Its errors are
// fixed messages that never repeat any of rawURL. A URL with an '@' after its
// host (in the path, query or fragment) or a '#' is refused: it is a password
// with a '/', '?' or '#' that was not percent-encoded, whose second half
// would otherwise be dialled as a host.
func Parse(rawURL string) (Options, error) {
	u, err := url.Parse(rawURL)
	if err != nil || strings.Contains(rawURL, "#") {
		return Options{}, errors.New(badURL)
	}
	switch u.Scheme {
	case "redis", "rediss", "unix", "valkey", "valkeys":
	default:
		return Options{}, errors.New("the scheme is not redis, rediss or unix (want redis://[user:password@]host:port[/db])")
	}
	if strings.Contains(u.Path, "@") || strings.Contains(u.RawQuery, "@") {
		return Options{}, errors.New(badURL)
	}
	opt, err := rueidis.ParseURL(rawURL)
	if err != nil {
		return Options{}, errors.New(badURL)
	}
	if opt.Dialer.Timeout == 0 {
		opt.Dialer.Timeout = connectTimeout
	}
	if opt.ConnWriteTimeout == 0 {
		opt.ConnWriteTimeout = callTimeout
	}
	// No CLIENT SETINFO: the ACL users of docs/redis.md do not grant it.
	opt.ClientSetInfo = rueidis.DisableClientSetInfo
	return Options{opt: opt}, nil
}

// WithTLS returns o with the trust and client certificate of extra for a
// rediss:// URL: extra's RootCAs, when set, replace the system roots, and its
// Certificates are offered to a server that asks for one; the server name and
// skip_verify stay the URL's. Sentinels are reached with the same settings.
// It changes nothing for a redis:// URL, nor with a nil extra.
func (o Options) WithTLS(extra *tls.Config) Options {
	if o.opt.TLSConfig == nil || extra == nil {
		return o
	}
	merged := o.opt.TLSConfig.Clone()
	if extra.RootCAs != nil {
		merged.RootCAs = extra.RootCAs
	}
	if len(extra.Certificates) > 0 {
		merged.Certificates = extra.Certificates
	}
	o.opt.TLSConfig = merged
	return o
}

// String returns the addresses o connects to, and never the password.
func (o Options) String() string { return strings.Join(o.opt.InitAddress, ",") }

// Format prints String under any verb and flags, so that no print of a
// struct holding o shows the password.
func (o Options) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, fmt.FormatString(f, verb), o.String())
}

// MarshalText returns String.
func (o Options) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// TLS reports whether o connect with TLS (rediss://).
func (o Options) TLS() bool { return o.opt.TLSConfig != nil }

// Timeout is how long one call may take.
func (o Options) Timeout() time.Duration { return o.opt.ConnWriteTimeout }

// clientOption returns what rueidis.NewClient takes, as a copy the caller may
// change.
func (o Options) clientOption() rueidis.ClientOption {
	opt := o.opt
	opt.InitAddress = slices.Clone(o.opt.InitAddress)
	if opt.Sentinel.MasterSet != "" {
		// rueidis.ParseURL sets no TLS for the sentinels themselves.
		opt.Sentinel.TLSConfig = opt.TLSConfig
		opt.Sentinel.Dialer = opt.Dialer
	}
	return opt
}

// Scrub returns msg, an error or a log line that may quote the password,
// without it.
func (o Options) Scrub(msg string) string {
	return secret.Scrub(msg, o.opt.Password, o.opt.Sentinel.Password)
}

// Conn is the poller's connection to Redis: a small client (one pipelined
// connection and one for transactions per node) that does no client-side
// caching, so it works on servers without CLIENT TRACKING, and fails a call at
// once when Redis refuses the connection rather than retrying it until the
// call's deadline. Its methods are safe for concurrent use.
type Conn struct {
	opt rueidis.ClientOption

	mu      sync.Mutex
	client  rueidis.Client
	dialing chan struct{} // closed when the attempt in flight ends
	lastErr error         // of the last attempt
	closed  bool
}

// Open returns a Conn for o. It does not connect: Client does, so a Redis that
// is down when the poller starts only fails its calls until it is back.
func Open(o Options) *Conn {
	opt := o.clientOption()
	opt.DisableCache = true
	// A negative multiplex is one pipelined connection per node (zero would
	// let rueidis pick up to four); the blocking pool serves Dedicated.
	opt.PipelineMultiplex = -1
	opt.BlockingPoolSize = 1
	opt.RetryDelay = retryDelay
	return &Conn{opt: opt}
}

// Timeout is how long one call may take.
func (c *Conn) Timeout() time.Duration { return c.opt.ConnWriteTimeout }

// Client returns the client, connecting first if no attempt succeeded yet.
// One attempt runs at a time, bounded by the connect timeout; callers wait
// for it until ctx ends. Once connected the client stays (rueidis reconnects
// it by itself). After Close it returns rueidis.ErrClosing.
//
// rueidis retries a read-only command after a network error other than a
// refused connection until its context ends, so every call needs a deadline.
func (c *Conn) Client(ctx context.Context) (rueidis.Client, error) {
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return nil, rueidis.ErrClosing
	case c.client != nil:
		defer c.mu.Unlock()
		return c.client, nil
	}
	if c.dialing == nil {
		c.dialing = make(chan struct{})
		go c.dial(c.dialing)
	}
	done := c.dialing
	c.mu.Unlock()

	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-done:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client != nil {
		return c.client, nil
	}
	return nil, c.lastErr
}

// dial makes one attempt, bounded by the connect timeout and, for a cluster's
// first topology read, by the call timeout.
func (c *Conn) dial(done chan struct{}) {
	client, err := rueidis.NewClient(c.opt)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil && c.closed {
		err = rueidis.ErrClosing
	}
	if err != nil && client != nil {
		client.Close()
	}
	if err == nil {
		c.client = client
	}
	c.lastErr, c.dialing = err, nil
	close(done)
}

// Close closes the client; an attempt still in flight closes what it makes.
// Callers of Client meanwhile get rueidis.ErrClosing at once, not after
// rueidis finished closing.
func (c *Conn) Close() {
	c.mu.Lock()
	c.closed = true
	client := c.client
	c.mu.Unlock()
	if client != nil {
		client.Close()
	}
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

// OpenURL is Parse then Open, for a URL that configuration did not read
// already (tests, tools).
func OpenURL(rawURL string) (*Conn, error) {
	o, err := Parse(rawURL)
	if err != nil {
		return nil, err
	}
	return Open(o), nil
}
