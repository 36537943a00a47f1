package daemon_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/test/testkit"
)

// brokenListener is a listener whose Accept fails for good, as when the
// process runs out of file descriptors.
type brokenListener struct{ net.Listener }

func (brokenListener) Accept() (net.Conn, error) {
	return nil, errors.New("accept: too many open files")
}

func health(gate *daemon.Gate) http.Handler { return daemon.NewHealth(gate, nil, zap.NewNop(), nil) }

// TestServerFailureStopsEverything checks that when any one server fails to
// serve, the others shut down, the work stops and Run returns the error, so
// a pod exits instead of running on with no public port, no metrics or no
// probes.
func TestServerFailureStopsEverything(t *testing.T) {
	for _, broken := range []int{0, 1} {
		t.Run([]string{"first", "second"}[broken], func(t *testing.T) {
			lns := []net.Listener{testkit.Listen(t), testkit.Listen(t)}
			lns[broken] = brokenListener{lns[broken]}
			var workStopped atomic.Bool
			done := make(chan error, 1)
			go func() {
				done <- daemon.Run(context.Background(), daemon.Plan{
					Servers: []daemon.Endpoint{{Handler: health(&daemon.Gate{}), Listener: lns[0]}, {Handler: health(&daemon.Gate{}), Listener: lns[1]}},
					Work: []func(context.Context) error{func(ctx context.Context) error {
						<-ctx.Done()
						workStopped.Store(true)
						return nil
					}},
					ShutdownTimeout: time.Second,
					Log:             zap.NewNop(),
				})
			}()
			// A guard against a hang, not a figure: it returns at once.
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "too many open files") {
					t.Errorf("Run = %v, want the serving error", err)
				}
				if !workStopped.Load() {
					t.Error("Run returned before the work stopped")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the rest goes on after one server failed")
			}
		})
	}
}

// TestShutdownOrder checks the order of a shutdown: the gate closes first
// and the server answers its 503 while draining; then the server stops
// cleanly, and only then does the work stop, so answers stay fresh until the
// last request; with StopWorkFirst the work stops at once instead, while the
// server still drains.
func TestShutdownOrder(t *testing.T) {
	testkit.Integration(t) // it waits seconds on the wall clock
	for _, first := range []bool{false, true} {
		t.Run(map[bool]string{false: "work last", true: "work first"}[first], func(t *testing.T) {
			ln := testkit.Listen(t)
			url := "http://" + ln.Addr().String() + "/readyz"
			gate := &daemon.Gate{}
			gate.Open()
			ctx, cancel := context.WithCancel(context.Background())
			workSaw := make(chan int, 1) // the server's answer as the work stopped
			done := make(chan error, 1)
			go func() {
				done <- daemon.Run(ctx, daemon.Plan{
					Servers: []daemon.Endpoint{{Handler: health(gate), Listener: ln}},
					Work: []func(context.Context) error{func(ctx context.Context) error {
						<-ctx.Done()
						workSaw <- testkit.Status(url)
						return errors.New("work's own error")
					}},
					StopWorkFirst:   first,
					Gate:            gate,
					Drain:           time.Second,
					ShutdownTimeout: 10 * time.Second,
					Log:             zap.NewNop(),
				})
			}()
			testkit.Eventually(t, "ready", func() bool { return testkit.Status(url) == http.StatusOK })
			cancel()
			if !first {
				testkit.Eventually(t, "unready while draining", func() bool { return testkit.Status(url) == http.StatusServiceUnavailable })
			}
			select {
			case err := <-done:
				if err == nil || err.Error() != "work's own error" {
					t.Errorf("Run = %v, want the work's error alone (a clean stop of the server)", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Run did not return")
			}
			want := 0 // no server any more
			if first {
				want = http.StatusServiceUnavailable // still draining
			}
			if got := <-workSaw; got != want {
				t.Errorf("as the work stopped the server answered %d, want %d", got, want)
			}
		})
	}
}
