package poller_test

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
)

// BenchmarkTickCoordinatedIdle measures the common tick: the fleet's state
// is read and merged, and no app is due.
func BenchmarkTickCoordinatedIdle(b *testing.B) {
	keys := make([]string, 13)
	fleet := newFleet()
	for i := range keys {
		keys[i] = fmt.Sprintf("app%02d", i)
		fleet.set(keys[i], release.Entry{FetchedAt: t0, ETag: "e1", Release: rel("v1")})
	}
	clock := newClock()
	p, err := poller.New(poller.Config{
		Apps: apps(keys...), Timing: timing, Source: &fakeSource{clock: clock},
		Fleet: fleet, Coordinate: true, Logger: zap.NewNop(), Clock: clock,
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		p.Tick(ctx)
		fleet.takeCalls()
	}
}
