package store

import (
	"context"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/redistest"
)

// BenchmarkLoad reads the 13 default apps and the backoff; it reports the
// round trips of one Load, which must be 1.
func BenchmarkLoad(b *testing.B) {
	srv := redistest.Start(b)
	c := &countingClient{Client: srv.Client(b)}
	s := New(fixedConn{c}, "poller-a", testApps)
	ctx := context.Background()
	for i, app := range apps13 {
		if _, err := s.PutFetch(ctx, app, fetch(t0.Add(time.Duration(i)*time.Second), `"e"`, rel("v1.0.0"))); err != nil {
			b.Fatal(err)
		}
	}
	c.reset()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.Load(ctx, apps13); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(c.reset()))/float64(b.N), "roundtrips/op")
}

// BenchmarkPutFetch makes guarded writes that go through, on each path.
func BenchmarkPutFetch(b *testing.B) {
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			srv := redistest.Start(b)
			s := newStore(b, p.url(b, srv))
			ctx := context.Background()
			r := rel("v1.0.0")
			// The first write loads the script or finds it refused.
			if _, err := s.PutFetch(ctx, "photocraft", fetch(t0, `"e"`, r)); err != nil {
				b.Fatal(err)
			}
			when := t0
			b.ReportAllocs()
			for b.Loop() {
				when = when.Add(time.Millisecond)
				if ok, err := s.PutFetch(ctx, "photocraft", fetch(when, `"e"`, r)); err != nil || !ok {
					b.Fatalf("PutFetch = %v, %v", ok, err)
				}
			}
			if s.Mode() != p.mode {
				b.Fatalf("Mode() = %v, want %v", s.Mode(), p.mode)
			}
		})
	}
}
