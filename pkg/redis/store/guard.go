package store

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/storytold/craft-releases/pkg/logsafe"
	"github.com/storytold/craft-releases/pkg/release"
)

// guardLua is the second half of a guarded change made by script: it
// applies a decision made in Go only if the hash still holds what the
// decision read (docs/redis.md, "The guarded write").
//
//go:embed guard.lua
var guardLua string

// watchAttempts bounds how often a guarded change reads and decides again
// when another writer touched the key between its read and its write.
const watchAttempts = 5

// errContended is returned when every attempt lost to another writer.
var errContended = errors.New("key kept changing during the transaction")

// A write is one guarded write: set pairs unless the time field says the hash
// already holds something as new (or, with needETag, another ETag).
type write struct {
	app      release.App  // whose hash it is, for DecodeApp
	now      time.Time    // the writer's time, for DecodeApp
	releases *releaseMemo // the app's (nil: none)
	field    string       // the guarding time field
	at       int64        // the new time, Unix ms
	gap      int64        // the minimum gap, ms
	needETag bool         // refuse unless the hash's readable fetch has etag
	etag     string       // the required ETag, when needETag
	pairs    []string     // field, value, field, value…
}

// reads returns the fields that decide looks at for w.
func (w write) reads() []string {
	switch w.field {
	case fieldReadMS:
		return []string{fieldV, fieldReadMS, fieldAppRenames, fieldRepoRenames, fieldAnnouncements, fieldAlerts, fieldDecisions}
	case fieldFetchedMS:
		return []string{fieldV, fieldFetchedMS, fieldETag, fieldRelease, fieldCompanions, fieldHistory, fieldHistoryCompanions}
	}
	return []string{fieldV, w.field}
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
// is read as DecodeApp (or, for read_ms, DecodeMeta) reads it at the writer's
// time, so a hash of another format, an unreadable time or one more than
// release.MaxSkew ahead of the writer's clock, or (for fetched_ms) a fetch
// whose ETag or release is unreadable or refused, or (for read_ms) a meta whose lists or decisions are
// unreadable, never blocks, and gets overwritten. Both paths of the guarded
// write make this one decision, in Go.
func decide(h map[string]string, w write) verdict {
	e, _ := decodeApp(w.app, h, w.now, w.releases)
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

// guarded runs w on the hash at key (an app's or the meta hash).
func (s *Store) guarded(ctx context.Context, key string, w write) (verdict, error) {
	return s.apply(ctx, guardedChange(key, w))
}

// guardedChange is the change of key that w makes under the guard.
func guardedChange(key string, w write) change {
	return change{
		key:    key,
		reads:  w.reads(),
		decide: func(h map[string]string) verdict { return decide(h, w) },
		pairs:  w.pairs,
		ttl:    entryTTL,
	}
}

// A change is one guarded change of one key: a decision made in Go on the
// hash as read, then a write, or the key's deletion.
type change struct {
	key string
	// reads are the fields decide looks at.
	reads []string
	// decide is the verdict on the hash at key (nil when there is no key or
	// it holds another type); only written goes on to change the key.
	decide func(h map[string]string) verdict
	// pairs are the field/value pairs to set, renewing the key's TTL to
	// ttl; a key of another type or format is replaced whole. nil deletes
	// the key instead.
	pairs []string
	ttl   time.Duration
}

// apply makes ch by script, or through WATCH/MULTI/EXEC once Redis has
// refused the script itself. Either way decide is called in Go on what the
// key holds, so that both paths read a stored hash exactly as strictly.
func (s *Store) apply(ctx context.Context, ch change) (verdict, error) {
	ctx, cancel := context.WithTimeout(ctx, s.conn.Timeout())
	defer cancel()
	c, err := s.conn.Client(ctx)
	if err != nil {
		return 0, err
	}
	if !s.watch.Load() {
		v, err := s.viaScript(ctx, c, ch)
		if err == nil || !scriptRefused(err) {
			return v, err
		}
		if s.watch.CompareAndSwap(false, true) {
			s.log.Warn("redis refused the guarded-write script, using watch/multi/exec from now on", logsafe.NamedError("err", err))
			if s.onMode != nil {
				s.onMode(ModeWatch)
			}
		}
	}
	return s.viaWatch(ctx, c, ch)
}

// viaScript reads ch.reads, decides, and makes the change with one EVALSHA
// (EVAL when Redis does not know the script) that applies it only if those
// fields still hold what was read; else it reads and decides again.
func (s *Store) viaScript(ctx context.Context, c rueidis.Client, ch change) (verdict, error) {
	for range watchAttempts {
		read, err := ReadBounded(ctx, c, []HashFields{{Key: ch.key, Fields: ch.reads}})
		if err != nil {
			return 0, err
		}
		h, print := fingerprint(read[0], ch.reads)
		if v := ch.decide(h); v != written {
			return v, nil
		}
		ttl := "0"
		if ch.pairs != nil {
			ttl = strconv.FormatInt(ch.ttl.Milliseconds(), 10)
		}
		args := make([]string, 0, 3+2*len(ch.reads)+len(ch.pairs))
		args = append(args, print, ttl, strconv.Itoa(len(ch.reads)))
		args = append(args, ch.reads...)
		for _, f := range ch.reads {
			args = append(args, strconv.FormatInt(fieldLimit(f), 10))
		}
		n, err := s.script.Exec(ctx, c, []string{ch.key}, append(args, ch.pairs...)).AsInt64()
		if err != nil {
			return 0, err
		}
		if n == 1 {
			return written, nil
		}
	}
	return 0, errContended
}

// fingerprint returns the fields of a bounded read b of fields as decide
// reads them (nil when the key holds another type), with their fingerprint
// as guard.lua computes it: the SHA-1 of each field's length, ":" and value
// ("-" for none, or one over its bound), joined by ";"; or "other" for a key
// of another type.
func fingerprint(b Bounded, fields []string) (map[string]string, string) {
	if b.Other {
		return nil, "other"
	}
	parts := make([]string, len(fields))
	for i, f := range fields {
		v, ok := b.Hash[f]
		if !ok {
			parts[i] = "-"
			continue
		}
		parts[i] = strconv.Itoa(len(v)) + ":" + v
	}
	sum := sha1.Sum([]byte(strings.Join(parts, ";")))
	return b.Hash, hex.EncodeToString(sum[:])
}

// viaWatch makes ch's decision in Go between WATCH and EXEC, and decides
// again when EXEC reports that another writer touched the key.
func (s *Store) viaWatch(ctx context.Context, c rueidis.Client, ch change) (verdict, error) {
	var v verdict
	err := c.Dedicated(func(d rueidis.DedicatedClient) error {
		var err error
		v, err = s.watchLoop(ctx, d, ch)
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

func (s *Store) watchLoop(ctx context.Context, d rueidis.DedicatedClient, ch change) (verdict, error) {
	for range watchAttempts {
		res := d.DoMulti(ctx, d.B().Watch().Key(ch.key).Build(), d.B().Type().Key(ch.key).Build())
		if err := res[0].Error(); err != nil {
			return 0, err
		}
		kind, err := res[1].ToString()
		if err != nil {
			return 0, err
		}
		read, err := readBounded(d.B(), func(cmds []rueidis.Completed) []rueidis.RedisResult { return d.DoMulti(ctx, cmds...) },
			[]HashFields{{Key: ch.key, Fields: ch.reads}})
		if err != nil {
			return 0, err
		}
		h := read[0].Hash
		// A key of another type or format is replaced whole, as guard.lua does.
		replace := kind != "none" && (kind != "hash" || h[fieldV] != formatVersion)
		if v := ch.decide(h); v != written {
			return v, d.Do(ctx, d.B().Unwatch().Build()).Error()
		}
		tx := rueidis.Commands{d.B().Multi().Build()}
		switch {
		case ch.pairs == nil:
			tx = append(tx, d.B().Del().Key(ch.key).Build())
		case replace:
			tx = append(tx, d.B().Del().Key(ch.key).Build())
			fallthrough
		default:
			tx = append(tx, hset(d.B(), ch.key, ch.pairs),
				d.B().Pexpire().Key(ch.key).Milliseconds(ch.ttl.Milliseconds()).Build())
		}
		res = d.DoMulti(ctx, append(tx, d.B().Exec().Build())...)
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
