// Command api serves GET /v1/craft_apps/release_info. With REDIS_URL it
// hydrates its snapshot from what the pollers share in Redis and never calls
// GitHub; without it (or with coordination off) it polls GitHub itself.
// Every setting is an environment variable: run it with --help for the list.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/storytold/craft-releases/pkg/api"
	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/github"
	"github.com/storytold/craft-releases/pkg/hydrate"
	"github.com/storytold/craft-releases/pkg/metrics"
	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/snapshot"
)

// version is stamped at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

// run owns the process: it parses the configuration, wires the parts and
// serves until ctx is cancelled or SIGINT/SIGTERM arrives, then shuts down in
// order: unready at once, drain in-flight requests, stop the background work.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
			config.Usage(stdout, "api")
			config.ScheduleUsage(stdout, getenv)
			return nil
		}
		return fmt.Errorf("unknown argument %q (try --help)", args[0])
	}
	cfg, warnings, err := config.LoadAPI(getenv)
	if err != nil {
		return err
	}
	log := cfg.Logger(stderr).With(zap.String("binary", "api"))
	defer func() { _ = log.Sync() }()
	config.LogStart(log, warnings, append(cfg.Fields(), zap.String("version", version))...)

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	snap := snapshot.New(cfg.Apps, time.Now)
	gate := &api.Gate{}
	// A registry of our own, not the global one, so that tests can run
	// several binaries in one process.
	reg := metrics.NewRegistry("api", version, cfg.PollInterval)
	background, err := feeder(cfg, snap, gate, log, reg)
	if err != nil {
		return err
	}
	requests := metrics.NewRequests()
	reg.MustRegister(requests)

	// Listen before anything can wait on Redis or GitHub, so /healthz answers
	// from the first second. The endpoint's port is public; /metrics is on
	// a port of its own that the Service does not expose.
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.HTTPAddr, err)
	}
	mln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		ln.Close()
		return fmt.Errorf("listen %s: %w", cfg.MetricsAddr, err)
	}
	log.Info("listening", zap.String("addr", ln.Addr().String()), zap.String("metrics_addr", mln.Addr().String()))
	server := api.New(snap, gate, log, api.Options{Observer: requests, MaxConnections: cfg.MaxConnections})
	private := api.NewHealth(gate, log, api.Options{Metrics: metrics.Handler(reg, log), Observer: requests})

	// Shutdown is ordered: unready at once, keep answering for a moment so
	// that probes and load balancers see the 503, drain the requests in
	// flight, and only then stop polling or hydrating. All of it within
	// SHUTDOWN_TIMEOUT_SECS.
	drain := min(time.Second, cfg.ShutdownTimeout/4)
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	var g errgroup.Group
	g.Go(func() error { return background(workCtx) })
	g.Go(func() error {
		select {
		case <-ctx.Done():
			gate.Close()
			log.Info("shutting down", zap.Duration("timeout", cfg.ShutdownTimeout))
			timer := time.NewTimer(drain)
			defer timer.Stop()
			select {
			case <-timer.C:
			case <-workCtx.Done():
			}
			stopServing()
		case <-workCtx.Done():
		}
		return nil
	})
	serveErr := serveAll(serveCtx, cfg.ShutdownTimeout-drain, listening{server, ln}, listening{private, mln})
	stopWork()
	if err := errors.Join(serveErr, g.Wait()); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// listening is a server and the listener it serves on.
type listening struct {
	server *api.Server
	ln     net.Listener
}

// serveAll serves each of servers until ctx ends, and returns once all of
// them stopped. When one fails to serve, the others shut down too, so that
// the pod exits with the error instead of running on half deaf (no metrics,
// or no public port) until Kubernetes kills it for another reason.
func serveAll(ctx context.Context, shutdownTimeout time.Duration, servers ...listening) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, l := range servers {
		g.Go(func() error { return l.server.Serve(gctx, l.ln, shutdownTimeout) })
	}
	return g.Wait()
}

// feeder returns the background work that keeps snap up to date, and opens
// gate when the pod may take traffic: at once when it polls GitHub itself,
// after the first load from Redis in split mode (or the hydrate timeout,
// unless Redis refuses the pod's credentials: hydrate.Hydrator.Ready). It
// registers the metrics of what it builds with reg.
func feeder(cfg config.API, snap *snapshot.Snapshot, gate *api.Gate, log *zap.Logger, reg prometheus.Registerer) (func(context.Context) error, error) {
	if !cfg.Standalone() {
		h, err := hydrate.New(cfg.RedisURL.Reveal(), cfg.Apps, snap, log, hydrate.WithMeta(snap), hydrate.WithTLS(cfg.RedisTLS.Config()))
		if err != nil {
			return nil, err
		}
		reg.MustRegister(metrics.NewAPI(snap, h))
		log.Info("mode", zap.String("mode", "split"))
		return func(ctx context.Context) error {
			var g errgroup.Group
			g.Go(func() error { h.Ready(ctx, cfg.HydrateTimeout, gate.Open); return nil })
			g.Go(func() error { return h.Run(ctx) })
			return g.Wait()
		}, nil
	}
	reg.MustRegister(metrics.NewAPI(snap, nil))
	gate.Open()
	if !cfg.PollingEnabled {
		log.Info("mode", zap.String("mode", "standalone"), zap.Bool("polling", false))
		return func(ctx context.Context) error { <-ctx.Done(); return nil }, nil
	}
	src, err := github.New(github.Options{
		BaseURL:   cfg.GitHubAPIURL,
		Token:     cfg.GitHubToken.Reveal(),
		UserAgent: "craft-releases-api/" + version,
	})
	if err != nil {
		return nil, err
	}
	observer := metrics.NewPoller(cfg.Apps)
	reg.MustRegister(observer)
	sched := cfg.Schedule(cfg.Polling)
	sched.Warn(log)
	observer.Schedule(sched.RequestsPerHour, sched.QuotaPerHour)
	p, err := poller.New(poller.Config{
		Apps:     cfg.Apps,
		Timing:   cfg.Timing(),
		Source:   src,
		Sink:     snap,
		Observer: observer,
		Logger:   log,
	})
	if err != nil {
		return nil, err
	}
	log.Info("mode", zap.String("mode", "standalone"), zap.Bool("polling", true))
	return p.Run, nil
}
