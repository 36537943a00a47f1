package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/release"
)

// Fields a reader reads, by hash. A field not listed is never read, however
// large: HGETALL would read it whole.
var (
	appFields = []string{fieldV, fieldFetchedMS, fieldETag, fieldRelease, fieldFailedMS, fieldFailures,
		fieldNotFoundSinceMS, fieldNotFound, fieldClaimedMS, fieldBy, fieldCompanions}
	historyFields = append(slices.Clip(appFields), fieldHistory, fieldHistoryCompanions)
	backoffFields = []string{fieldV, fieldUntilMS, fieldTrouble, fieldBy}
	metaFields    = []string{fieldV, fieldReadMS, fieldAppRenames, fieldRepoRenames, fieldAnnouncements, fieldAlerts, fieldDecisions, fieldBy}
	refreshFields = []string{fieldV, fieldAtMS, fieldTag, fieldBy}
)

// maxSmallField bounds every field but the release and the meta lists: a
// time, a count, an ETag (at most 256 bytes from GitHub), a tag, a hostname.
const maxSmallField = 1024

// fieldLimit is the longest value of field that a reader reads.
func fieldLimit(field string) int64 {
	switch field {
	case fieldRelease, fieldAppRenames, fieldRepoRenames, fieldAnnouncements, fieldAlerts, fieldDecisions:
		return release.MaxEncoded
	case fieldCompanions:
		return maxCompanionsField
	case fieldHistory:
		return maxHistoryField
	case fieldHistoryCompanions:
		return maxHistoryCompanionsField
	}
	return maxSmallField
}

// FieldsOf returns the fields of the hash of entry key (release.Entries)
// that a reader reads, for ReadBounded: a history entry's releases only in
// its own hash, so that the other entries cost no more reads. The slice is
// shared: do not modify it.
func FieldsOf(key string) []string {
	if _, ch := release.AppOf(key); ch == release.HistoryChannel {
		return historyFields
	}
	return appFields
}

// MetaFields returns the fields of the meta hash that a reader reads, for
// ReadBounded. The slice is shared: do not modify it.
func MetaFields() []string { return metaFields }

// Bounded is one hash as ReadBounded found it.
type Bounded struct {
	Hash  map[string]string // the fields read that exist; nil for no key or another type
	Other bool              // the key holds another type than a hash
	// Over are the fields left unread for being longer than their bound;
	// they read as absent.
	Over []string
}

// Err says why the hash was not read whole, or is nil.
func (b Bounded) Err() error {
	if len(b.Over) == 0 {
		return nil
	}
	return fmt.Errorf("%s: over the bound, left unread", strings.Join(b.Over, ", "))
}

// A HashFields is what ReadBounded reads of one key.
type HashFields struct {
	Key    string
	Fields []string // FieldsOf, MetaFields…
}

// ReadBounded reads the fields of each read without ever reading a field
// longer than its bound (release.MaxEncoded for the release and the meta
// lists, their own for the companions and the history fields, 1 KiB for
// the rest): HSTRLEN of every field, then, a round trip
// later, HMGET of those within bounds. A field that grew past its bound
// between the two is dropped once read, and never decoded. It returns the
// first error other than a key of another type.
func ReadBounded(ctx context.Context, c rueidis.Client, reads []HashFields) ([]Bounded, error) {
	return readBounded(c.B(), func(cmds []rueidis.Completed) []rueidis.RedisResult { return c.DoMulti(ctx, cmds...) }, reads)
}

// Unchanged reports, for each key, whether no write reached it since its
// tracking probe was last sent: rueidis's client-side cache still holds the
// probe (HSTRLEN of the hash's format version, cached for at most ttl),
// which Redis invalidates at the key's first write. A probe the cache does
// not hold is sent, which tracks the key anew: a read of the key made after
// Unchanged returns is current until the next invalidation. A key of another
// type reports false; any other error is returned (rueidis.ErrNoCache where
// Redis refuses client tracking), and then some probes may have been sent.
// A probe another caller of c has in flight reads as a hit: c is the
// caller's alone. See docs/redis.md, "How API pods read".
func Unchanged(ctx context.Context, c rueidis.Client, keys []string, ttl time.Duration) ([]bool, error) {
	probes := make([]rueidis.CacheableTTL, len(keys))
	for i, k := range keys {
		probes[i] = rueidis.CT(c.B().Hstrlen().Key(k).Field(fieldV).Cache(), ttl)
	}
	unchanged := make([]bool, len(keys))
	for i, r := range c.DoMultiCache(ctx, probes...) {
		err := r.Error()
		if err != nil && !isWrongType(err) {
			return nil, err
		}
		unchanged[i] = err == nil && r.IsCacheHit()
	}
	return unchanged, nil
}

// readBounded is ReadBounded with b to build and send to send the commands.
func readBounded(b rueidis.Builder, send func([]rueidis.Completed) []rueidis.RedisResult, reads []HashFields) ([]Bounded, error) {
	out := make([]Bounded, len(reads))
	var lens []rueidis.Completed
	var owner []int      // owner[i]: the read of lens[i]
	var fieldOf []string // fieldOf[i]: the field of lens[i]
	for i, r := range reads {
		for _, f := range r.Fields {
			lens = append(lens, b.Hstrlen().Key(r.Key).Field(f).Build())
			owner, fieldOf = append(owner, i), append(fieldOf, f)
		}
	}
	res, err := sent(send, lens, func(i int) *Bounded { return &out[owner[i]] })
	if err != nil {
		return nil, err
	}
	wanted := make([][]string, len(reads))
	for i, r := range res {
		b := &out[owner[i]]
		if b.Other {
			continue
		}
		n, err := r.AsInt64()
		if err != nil {
			return nil, err
		}
		if f := fieldOf[i]; n > fieldLimit(f) {
			b.Over = append(b.Over, f)
		} else {
			// 0 is an empty field or none: HMGET tells them apart.
			wanted[owner[i]] = append(wanted[owner[i]], fieldOf[i])
		}
	}
	var gets []rueidis.Completed
	var at []int
	for i, r := range reads {
		if !out[i].Other && len(wanted[i]) > 0 {
			gets = append(gets, b.Hmget().Key(r.Key).Field(wanted[i]...).Build())
			at = append(at, i)
		}
	}
	res, err = sent(send, gets, func(i int) *Bounded { return &out[at[i]] })
	if err != nil {
		return nil, err
	}
	for n, r := range res {
		b := &out[at[n]]
		if b.Other {
			continue
		}
		vals, err := r.ToArray()
		if err != nil {
			return nil, err
		}
		b.Hash = make(map[string]string, len(vals))
		for j, v := range vals {
			f := wanted[at[n]][j]
			s, err := v.ToString()
			switch {
			case rueidis.IsRedisNil(err):
			case err != nil:
				return nil, err
			case int64(len(s)) > fieldLimit(f):
				b.Over = append(b.Over, f)
			default:
				b.Hash[f] = s
			}
		}
	}
	return out, nil
}

// sent sends cmds in one pipeline. A key of another type marks its hash
// (of) Other instead of failing.
func sent(send func([]rueidis.Completed) []rueidis.RedisResult, cmds []rueidis.Completed, of func(i int) *Bounded) ([]rueidis.RedisResult, error) {
	if len(cmds) == 0 {
		return nil, nil
	}
	res := send(cmds)
	for i, r := range res {
		if err := r.Error(); err != nil {
			if isWrongType(err) {
				of(i).Other = true
				continue
			}
			return nil, err
		}
	}
	return res, nil
}

func isWrongType(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && strings.HasPrefix(re.Error(), "WRONGTYPE")
}

// ClockOffset measures how far c's clock runs ahead of Redis's (TIME), taking
// Redis's answer to stand at the middle of the round trip. Redis's clock is
// the fleet's "now" (docs/redis.md, "Time you cannot trust").
func ClockOffset(ctx context.Context, c rueidis.Client, clk clock.Clock) (time.Duration, error) {
	start := clk.Now()
	parts, err := c.Do(ctx, c.B().Time().Build()).AsStrSlice()
	end := clk.Now()
	if err != nil {
		return 0, fmt.Errorf("time: %w", err)
	}
	if len(parts) != 2 {
		return 0, fmt.Errorf("time: %d parts, want 2", len(parts))
	}
	sec, err1 := strconv.ParseInt(parts[0], 10, 64)
	usec, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || sec <= 0 || usec < 0 || usec >= 1e6 {
		return 0, fmt.Errorf("time: %q is not seconds and microseconds", parts)
	}
	redis := time.Unix(sec, usec*1000)
	return start.Add(end.Sub(start) / 2).Sub(redis), nil
}
