package store

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/zap"
)

// guardLua is the guarded write as one Lua script (redis.md, "The guarded write").
//
//go:embed guard.lua
var guardLua string

// clearBackoffLua is the guarded clearing of the backoff hash (Store.ClearBackoff).
//
//go:embed clear_backoff.lua
var clearBackoffLua string

// watchAttempts bounds how often the WATCH path re-reads and decides again
// when another writer touched the key between its read and its EXEC.
const watchAttempts = 5

// errContended is returned when every WATCH attempt lost to another writer.
var errContended = errors.New("key kept changing during the transaction")

// A write is one guarded write: set pairs unless the time field says the hash
// already holds something as new (or, with needETag, another ETag).
type write struct {
	field    string   // the guarding time field
	at       int64    // the new time, Unix ms
	gap      int64    // the minimum gap, ms
	needETag bool     // refuse unless the hash's readable fetch has etag
	etag     string   // the required ETag, when needETag
	pairs    []string // field, value, field, value…
}

// A verdict is what the guarded write did.
type verdict int

const (
	written        verdict = iota
	refusedTime            // the hash holds a time within gap of, or after, the new one
	refusedETag            // the hash's fetch has another ETag
	refusedNoFetch         // an ETag was required and the hash holds no readable fetch
)

// decide is the guarded write's decision on a hash h (nil when the key is
// absent or not a hash). A time blocks only when a reader would trust it: it
// is read as DecodeApp (or, for read_ms, DecodeMeta) reads it, so a hash of
// another format, an unreadable time, or (for fetched_ms) a fetch whose ETag
// or release is unreadable, or (for read_ms) a meta whose lists are
// unreadable, never blocks, and gets overwritten. guard.lua makes the same
// decision.
func decide(h map[string]string, w write) verdict {
	e := DecodeApp(h)
	var current time.Time
	switch w.field {
	case fieldReadMS:
		_, current = DecodeMeta(h)
	case fieldFetchedMS:
		current = e.FetchedAt
	case fieldFailedMS:
		current = e.FailedAt
	case fieldClaimedMS:
		current = e.ClaimedAt
	}
	if !current.IsZero() && current.UnixMilli()+w.gap > w.at {
		return refusedTime
	}
	if w.needETag {
		if !e.Fetched() {
			return refusedNoFetch
		}
		if e.ETag != w.etag {
			return refusedETag
		}
	}
	return written
}

// guarded runs w on the hash at key (an app's or the meta hash) through the
// script, or through WATCH/MULTI/EXEC once Redis has refused the script
// itself.
func (s *Store) guarded(ctx context.Context, key string, w write) (verdict, error) {
	script := func(ctx context.Context, c rueidis.Client) (verdict, error) { return s.viaScript(ctx, c, key, w) }
	return s.scriptOrWatch(ctx, script, txn{
		key:    key,
		decide: func(h map[string]string) verdict { return decide(h, w) },
		queue: func(b rueidis.Builder, replace bool) rueidis.Commands {
			var cmds rueidis.Commands
			if replace {
				cmds = append(cmds, b.Del().Key(key).Build())
			}
			return append(cmds, hset(b, key, w.pairs), b.Pexpire().Key(key).Milliseconds(entryTTL.Milliseconds()).Build())
		},
	})
}

// A txn is one guarded change of one key as WATCH/MULTI/EXEC makes it:
// decide in Go on the hash as read, then queue the change.
type txn struct {
	key string
	// decide is the verdict on the hash at key (nil when there is no key or
	// it holds another type); only written goes on to queue.
	decide func(h map[string]string) verdict
	// queue returns the commands between MULTI and EXEC; replace says the
	// key holds another type or format and is to be replaced whole.
	queue func(b rueidis.Builder, replace bool) rueidis.Commands
}

// scriptOrWatch makes one guarded change with script, or as t through
// WATCH/MULTI/EXEC once Redis has refused scripts: the two must decide alike.
func (s *Store) scriptOrWatch(ctx context.Context, script func(context.Context, rueidis.Client) (verdict, error), t txn) (verdict, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	c, err := s.conn(ctx)
	if err != nil {
		return 0, err
	}
	if !s.watch.Load() {
		v, err := script(ctx, c)
		if err == nil || !scriptRefused(err) {
			return v, err
		}
		if s.watch.CompareAndSwap(false, true) {
			s.log.Warn("redis refused the guarded-write script, using watch/multi/exec from now on", zap.NamedError("err", err))
		}
	}
	return s.viaWatch(ctx, c, t)
}

// viaScript runs w as one EVALSHA (EVAL when Redis does not know the script).
func (s *Store) viaScript(ctx context.Context, c rueidis.Client, key string, w write) (verdict, error) {
	needETag := "0"
	if w.needETag {
		needETag = "1"
	}
	args := make([]string, 0, 6+len(w.pairs))
	args = append(args, w.field, strconv.FormatInt(w.at, 10), strconv.FormatInt(w.gap, 10),
		strconv.FormatInt(entryTTL.Milliseconds(), 10), needETag, w.etag)
	args = append(args, w.pairs...)
	n, err := s.script.Exec(ctx, c, []string{key}, args).AsInt64()
	if err != nil {
		return 0, err
	}
	switch n {
	case 1:
		return written, nil
	case 0:
		return refusedTime, nil
	case -1:
		return refusedETag, nil
	case -2:
		return refusedNoFetch, nil
	}
	return 0, fmt.Errorf("guard script answered %d", n)
}

// viaWatch makes t's decision in Go between WATCH and EXEC, and decides
// again when EXEC reports that another writer touched the key.
func (s *Store) viaWatch(ctx context.Context, c rueidis.Client, t txn) (verdict, error) {
	var v verdict
	err := c.Dedicated(func(d rueidis.DedicatedClient) error {
		var err error
		v, err = s.watchLoop(ctx, d, t)
		_, isRedis := rueidis.IsRedisErr(err)
		if err != nil && !isRedis && !errors.Is(err, errContended) {
			// A timeout or broken connection can leave a WATCH or MULTI
			// open on it; the pool must not hand it to the next caller.
			d.Close()
		}
		return err
	})
	return v, err
}

func (s *Store) watchLoop(ctx context.Context, d rueidis.DedicatedClient, t txn) (verdict, error) {
	for range watchAttempts {
		res := d.DoMulti(ctx, d.B().Watch().Key(t.key).Build(), d.B().Hgetall().Key(t.key).Build())
		if err := res[0].Error(); err != nil {
			return 0, err
		}
		h, replace, err := readHash(res[1])
		if err != nil {
			return 0, err
		}
		if v := t.decide(h); v != written {
			return v, d.Do(ctx, d.B().Unwatch().Build()).Error()
		}
		if s.beforeExec != nil {
			s.beforeExec()
		}
		tx := append(rueidis.Commands{d.B().Multi().Build()}, t.queue(d.B(), replace)...)
		tx = append(tx, d.B().Exec().Build())
		res = d.DoMulti(ctx, tx...)
		// A command refused while queued (NOPERM for HSET, say) makes EXEC
		// fail with EXECABORT; its own error says more.
		for _, r := range res[:len(res)-1] {
			if err := r.Error(); err != nil {
				return 0, err
			}
		}
		replies, err := res[len(res)-1].ToArray()
		if rueidis.IsRedisNil(err) {
			continue
		}
		if err != nil {
			return 0, err
		}
		for _, r := range replies {
			if err := r.Error(); err != nil {
				return 0, err
			}
		}
		return written, nil
	}
	return 0, errContended
}

// hset builds HSET key with the field/value pairs.
func hset(b rueidis.Builder, key string, pairs []string) rueidis.Completed {
	fv := b.Hset().Key(key).FieldValue()
	for i := 0; i+1 < len(pairs); i += 2 {
		fv = fv.FieldValue(pairs[i], pairs[i+1])
	}
	return fv.Build()
}

// readHash reads an HGETALL reply. A key that holds another type reads as
// absent and is to be replaced by the next write, as is a hash of another
// format version.
func readHash(r rueidis.RedisResult) (h map[string]string, replace bool, err error) {
	h, err = r.AsStrMap()
	if err != nil {
		if re, ok := rueidis.IsRedisErr(err); ok && strings.HasPrefix(re.Error(), "WRONGTYPE") {
			return nil, true, nil
		}
		return nil, false, err
	}
	return h, len(h) > 0 && h[fieldV] != formatVersion, nil
}

// scriptRefused reports whether err is Redis refusing the guard script itself
// (the user lacks @scripting, EVAL or EVALSHA is renamed away or disabled),
// as opposed to an ordinary failure: unreachable, timeout, BUSY, OOM,
// READONLY, LOADING, MASTERDOWN, or an error raised inside the running script.
func scriptRefused(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && refusesScript(re.Error())
}

// refusesScript reports whether a Redis error message, answering EVALSHA or
// EVAL, refuses the command itself.
func refusesScript(msg string) bool {
	if strings.Contains(msg, "@user_script") {
		return false // raised inside the script, so scripts do run
	}
	code, rest, _ := strings.Cut(msg, " ")
	if !isErrorCode(code) {
		// rueidis drops the ERR of "ERR unknown command …".
		code, rest = "ERR", msg
	}
	rest = strings.ToLower(rest)
	namesEval := strings.Contains(rest, "'eval") || strings.Contains(rest, "`eval")
	switch code {
	case "NOPERM":
		return namesEval
	case "ERR":
		return namesEval && (strings.Contains(rest, "unknown command") ||
			strings.Contains(rest, "disabled") || strings.Contains(rest, "not allowed"))
	}
	return false
}

// isErrorCode reports whether w is an error code such as ERR, NOPERM or OOM.
func isErrorCode(w string) bool {
	if w == "" {
		return false
	}
	for _, r := range w {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}
