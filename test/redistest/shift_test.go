package redistest_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/redistest"
)

// TestStartShifted checks that a shifted server's TIME moves with its Shift,
// both ways, while it runs.
func TestStartShifted(t *testing.T) {
	s, shift := redistest.StartShifted(t, time.Hour)
	redisNow := func() time.Time {
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
		if got := redisNow().Sub(time.Now()); (got - want).Abs() > 2*time.Second {
			t.Errorf("shift %v: redis's clock is %v off the machine's", want, got)
		}
	}
}
