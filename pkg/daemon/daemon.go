// Package daemon is the one way cmd/api and cmd/poller run as processes: the
// exit status and the signals of main, their HTTP servers with the
// connection cap, the health endpoints and the readiness Gate, and the
// ordered shutdown of servers and background work. It knows no product
// package and no router: the poller links it without the API.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
)

// A Command is a binary's whole run: its arguments, environment and standard
// streams, until ctx ends.
type Command func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error

// Main runs cmd as the process, its context ending at SIGINT or SIGTERM, and
// exits 1 with "name: error" on stderr when it fails.
func Main(name string, cmd Command) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := cmd(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// Plan is what Run runs.
type Plan struct {
	Servers []Endpoint
	// Work runs in goroutines of its own from the start; its context ends
	// once the servers stopped, or with ctx when StopWorkFirst is set.
	Work []func(context.Context) error
	// StopWorkFirst ends the work's context with ctx, while the servers
	// still drain: for work that must not start anything new after a
	// signal (the poller's next GitHub request), rather than work that keeps
	// the answers fresh until the last request (the API's).
	StopWorkFirst bool
	// Gate is closed when the shutdown starts; nil: none.
	Gate *Gate
	// Drain is how long the servers keep answering after Gate closed, so
	// that probes and load balancers see the 503.
	Drain time.Duration
	// ShutdownTimeout bounds the whole shutdown, Drain included.
	ShutdownTimeout time.Duration
	Log             *zap.Logger
}

// Run serves and works until ctx ends, then shuts down in order: Gate
// closes, the servers answer for Drain more, drain what is in flight within
// the rest of ShutdownTimeout, and only then does the work stop (at once,
// with StopWorkFirst). When a
// server fails to serve, the others and the work stop at once, so that the
// process exits with the error instead of running on half deaf until
// Kubernetes kills it for another reason. Run returns once everything
// stopped, with every error of serving and of work.
func Run(ctx context.Context, p Plan) error {
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	var work errgroup.Group
	for _, w := range p.Work {
		work.Go(func() error { return w(workCtx) })
	}

	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	servers, serversCtx := errgroup.WithContext(serveCtx)
	for _, l := range p.Servers {
		servers.Go(func() error { return Serve(serversCtx, l, p.ShutdownTimeout-p.Drain, p.Log) })
	}
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			if p.Gate != nil {
				p.Gate.Close()
			}
			if p.StopWorkFirst {
				stopWork()
			}
			p.Log.Info("shutting down", zap.Duration("timeout", p.ShutdownTimeout))
			select {
			case <-time.After(p.Drain):
			case <-serversCtx.Done():
			}
			stopServing()
		case <-serversCtx.Done():
		}
		close(stopped)
	}()
	serveErr := servers.Wait()
	stopServing()
	<-stopped
	stopWork()
	return errors.Join(serveErr, work.Wait())
}
