package redistest_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/redistest"
)

// TestShift checks that a shifted server's TIME, and its replica's, move
// with the Shift, both ways, while they run.
func TestShift(t *testing.T) {
	shift := redistest.NewShift(t, time.Hour)
	primary := shift.Start(t, "--repl-diskless-sync-delay", "0")
	replica := redistest.StartReplica(t, primary)
	redisNow := func(s *redistest.Server) time.Time {
		reply, err := s.Query("TIME")
		if err != nil {
			t.Fatal(err)
		}
		parts := reply.([]any)
		sec, _ := strconv.ParseInt(parts[0].(string), 10, 64)
		return time.Unix(sec, 0)
	}
	for _, want := range []time.Duration{time.Hour, -time.Hour, 0} {
		shift.Set(want)
		for _, s := range []*redistest.Server{primary, replica} {
			if got := time.Until(redisNow(s)); (got - want).Abs() > 2*time.Second {
				t.Errorf("shift %v: %s's clock is %v off the machine's", want, s.Addr, got)
			}
		}
	}
}
