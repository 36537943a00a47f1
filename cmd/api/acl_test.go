package main

import (
	"context"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/test/redistest"
)

// TestAPIUserWritesNothing: the user of store.APIACL (docs/operations.md),
// which test/e2e's pods run as with an empty ACL LOG, cannot write a release
// entry: not with a write command, not through a script, not even with a
// right to one, since its keys are read-only.
func TestAPIUserWritesNothing(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	rs.MustDo(store.SetUser("craft-api", "api-secret", store.APIACL)...)
	conn, err := redis.OpenURL("redis://craft-api:api-secret@" + rs.Addr)
	must(t, err)
	t.Cleanup(conn.Close)
	ctx := context.Background()
	c, err := conn.Client(ctx)
	must(t, err)
	key := store.AppKey("photocraft")
	for _, cmd := range [][]string{
		{"HSET", key, "fetched_ms", "1"},
		{"DEL", key},
		{"EVAL", "return redis.call('HSET', KEYS[1], 'v', '2')", "1", key},
		{"PEXPIRE", key, "1"},
		{"FLUSHALL"},
	} {
		err := c.Do(ctx, c.B().Arbitrary(cmd...).Build()).Error()
		if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("%v as the API's user: %v, want NOPERM", cmd, err)
		}
	}
	rs.MustDo("ACL", "SETUSER", "craft-api", "+hset")
	if err := c.Do(ctx, c.B().Arbitrary("HSET", key, "fetched_ms", "1").Build()).Error(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("HSET with the command granted: %v, want NOPERM for the read-only key", err)
	}
}
