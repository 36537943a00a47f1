package main

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/api"
	"go.uber.org/zap"
)

// brokenListener is a listener whose Accept fails for good, as when the
// process runs out of file descriptors.
type brokenListener struct{ net.Listener }

func (brokenListener) Accept() (net.Conn, error) {
	return nil, errors.New("accept: too many open files")
}

// TestServerFailureStopsThePod checks that when either listener fails to
// serve, the other one shuts down too and serveAll returns the error, so
// the pod exits instead of running on with no public port or no metrics.
func TestServerFailureStopsThePod(t *testing.T) {
	for _, broken := range []string{"public", "metrics"} {
		t.Run(broken, func(t *testing.T) {
			listen := func() net.Listener {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				return ln
			}
			public, metrics := listen(), listen()
			if broken == "public" {
				public = brokenListener{public}
			} else {
				metrics = brokenListener{metrics}
			}
			srv := func() *api.Server { return api.NewHealth(&api.Gate{}, zap.NewNop(), api.Options{}) }
			done := make(chan error, 1)
			go func() {
				done <- serveAll(context.Background(), time.Second, listening{srv(), public}, listening{srv(), metrics})
			}()
			// A guard against a hang, not a figure: it returns at once.
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "too many open files") {
					t.Errorf("serveAll = %v, want the serving error", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the other server goes on after one failed")
			}
		})
	}
}
