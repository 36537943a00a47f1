package poller_test

import (
	"context"
	"testing"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakeclock"
)

// BenchmarkTickCoordinatedIdle measures the common tick: the fleet's state
// is read and merged, and no app is due.
func BenchmarkTickCoordinatedIdle(b *testing.B) {
	fleet := newFleet()
	for _, k := range thirteen {
		fleet.set(k, release.Entry{FetchedAt: t0, ETag: "e1", Release: rel("v1")})
	}
	clock := fakeclock.New(t0)
	p, err := poller.New(poller.Config{
		Apps: apps(thirteen...), Timing: timing, Source: &fakeSource{clock: clock},
		Fleet: fleet, Coordinate: true, Logger: zap.NewNop(), Clock: clock,
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		p.Tick(ctx)
		fleet.calls.take()
	}
}
