// Command api serves GET /v1/craft_apps/release_info. With REDIS_URL it
// hydrates its snapshot from what the pollers share in Redis and never calls
// GitHub; without it (or with coordination off) it polls GitHub itself.
// Every setting is an environment variable: run it with --help for the list.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/storytold/craft-releases/pkg/api"
	"github.com/storytold/craft-releases/pkg/cloudflare"
	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/github"
	"github.com/storytold/craft-releases/pkg/metrics"
	"github.com/storytold/craft-releases/pkg/metrics/apipod"
	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/hydrate"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/routes"
	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/pkg/updates/companion"
	"github.com/storytold/craft-releases/pkg/webhook"
)

// version is stamped at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() { daemon.Main("api", run) }

// run owns the process: it parses the configuration, wires the parts and
// serves until ctx ends (SIGINT or SIGTERM), then shuts down in order
// (daemon.Run): unready at once, drain in-flight requests, stop the
// background work.
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

	snap := snapshot.New(cfg.Apps, nil)
	gate := &daemon.Gate{}
	// A registry of our own, not the global one, so that tests can run
	// several binaries in one process.
	reg := metrics.NewRegistry("api", version, cfg.PollInterval)
	background, fleet, err := feeder(cfg, snap, gate, log, reg)
	if err != nil {
		return err
	}
	requests, feeds := metrics.NewRequests(), metrics.NewFeeds()
	reg.MustRegister(requests, feeds)
	public := api.Options{Observer: requests, Feeds: feeds}
	if fleet != nil {
		deliveries := apipod.NewWebhook()
		reg.MustRegister(deliveries)
		secrets := make([]string, len(cfg.WebhookSecrets))
		for i, s := range cfg.WebhookSecrets {
			secrets[i] = s.Reveal()
		}
		hook, err := webhook.New(webhook.Config{Secrets: secrets, Apps: cfg.Apps, Recorder: fleet, Observer: deliveries, Log: log})
		if err != nil {
			return err
		}
		public.Webhook = hook
	}

	// Listen before anything can wait on Redis or GitHub, so /healthz answers
	// from the first second. The endpoint's port is public; /metrics is on
	// a port of its own that the Service does not expose.
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.HTTPAddr, err)
	}
	mln, err := lc.Listen(ctx, "tcp", cfg.MetricsAddr)
	if err != nil {
		ln.Close()
		return fmt.Errorf("listen %s: %w", cfg.MetricsAddr, err)
	}
	log.Info("listening", zap.String("addr", ln.Addr().String()), zap.String("metrics_addr", mln.Addr().String()))
	server := api.New(snap, gate, log, public)
	private := daemon.NewHealth(gate, metrics.Handler(reg, log), log, requests)

	// Probes and load balancers see the 503 for a moment before the
	// servers drain: all of it within SHUTDOWN_TIMEOUT_SECS.
	err = daemon.Run(ctx, daemon.Plan{
		Servers: []daemon.Endpoint{
			{Handler: server, Listener: ln, MaxConnections: cfg.MaxConnections},
			{Handler: private, Listener: mln},
		},
		Work:            []func(context.Context) error{background},
		Gate:            gate,
		Drain:           min(time.Second, cfg.ShutdownTimeout/4),
		ShutdownTimeout: cfg.ShutdownTimeout,
		Log:             log,
	})
	if err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// feeder returns the background work that keeps snap up to date, and opens
// gate when the pod may take traffic: at once when it polls GitHub itself,
// after the first load from Redis in split mode (or the hydrate timeout,
// unless Redis refuses the pod's credentials: hydrate.Hydrator.Ready). It
// registers the metrics of what it builds with reg. With a webhook secret it
// also returns where the webhook records refresh requests: Redis, for the
// pollers, in split mode; the in-process poller standalone. Without one the
// Recorder is nil.
func feeder(cfg config.API, snap *snapshot.Snapshot, gate *daemon.Gate, log *zap.Logger, reg prometheus.Registerer) (func(context.Context) error, webhook.Recorder, error) {
	hooked := len(cfg.WebhookSecrets) > 0
	if !cfg.Standalone() {
		return hydrated(cfg, snap, gate, log, reg)
	}
	reg.MustRegister(apipod.NewAPI(snap, nil))
	gate.Open()
	if !cfg.Polling.Enabled {
		log.Info("mode", zap.String("mode", "standalone"), zap.Bool("polling", false), zap.Bool("webhook", hooked))
		if !hooked {
			return func(ctx context.Context) error { <-ctx.Done(); return nil }, nil, nil
		}
		// Deliveries are checked and counted; there is nothing to fetch.
		local := webhook.NewLocal(func(string, release.Refresh) {}, nil)
		return local.Run, local, nil
	}
	src, err := github.New(github.Options{
		BaseURL:   cfg.GitHubAPIURL,
		Token:     cfg.GitHubToken.Reveal(),
		UserAgent: "craft-releases-api/" + version,
	})
	if err != nil {
		return nil, nil, err
	}
	observer := metrics.NewPoller(cfg.Entries())
	reg.MustRegister(observer)
	sched := cfg.Schedule(release.Requests(cfg.Apps))
	sched.Warn(log)
	observer.Schedule(sched.RequestsPerHour, sched.QuotaPerHour)
	pc := poller.Config{
		Apps:         cfg.Entries(),
		Timing:       cfg.Timing(),
		QuotaPerHour: sched.QuotaPerHour,
		Source:       src,
		Sink:         snap,
		Observer:     observer,
		Logger:       log,
		Companions:   companion.Names,
		PublicKeys:   cfg.PublicKeys,
	}
	work := []func(context.Context) error{}
	if cfg.Cloudflare.Enabled() {
		// The one process serves what it fetched before it hears of the
		// change (the Sink comes first), so the purge need not wait.
		purges := metrics.NewPurges()
		reg.MustRegister(purges)
		c := cfg.Cloudflare.Purger()
		c.Observer, c.Logger, c.Delay = purges, log, -1
		purger, err := cloudflare.New(c)
		if err != nil {
			return nil, nil, err
		}
		pc.Changes = func(app string, old, new *release.Release) { purger.Purge(routes.PurgePaths(app, old, new)) }
		work = append(work, purger.Run)
	}
	p, err := poller.New(pc)
	if err != nil {
		return nil, nil, err
	}
	work = append(work, p.Run)
	log.Info("mode", zap.String("mode", "standalone"), zap.Bool("polling", true), zap.Bool("webhook", hooked))
	var fleet webhook.Recorder
	if hooked {
		local := webhook.NewLocal(p.Refresh, nil)
		fleet = local
		work = append(work, local.Run)
	}
	return func(ctx context.Context) error {
		// One task failing stops the others.
		g, ctx := errgroup.WithContext(ctx)
		for _, w := range work {
			g.Go(func() error { return w(ctx) })
		}
		return g.Wait()
	}, fleet, nil
}

// hydrated is feeder in split mode: the snapshot kept from Redis, the gate
// opened once it was loaded, and the webhook's refresh requests recorded in
// Redis for the pollers.
func hydrated(cfg config.API, snap *snapshot.Snapshot, gate *daemon.Gate, log *zap.Logger, reg prometheus.Registerer) (func(context.Context) error, webhook.Recorder, error) {
	hooked := len(cfg.WebhookSecrets) > 0
	h, err := hydrate.New(cfg.Redis.Options, cfg.Entries(), snap, log, hydrate.WithMeta(snap))
	if err != nil {
		return nil, nil, err
	}
	var fleet webhook.Recorder
	closeFleet := func() {}
	if hooked {
		host, err := os.Hostname()
		if err != nil {
			return nil, nil, fmt.Errorf("hostname: %w", err)
		}
		c := redis.Open(cfg.Redis.Options)
		fleet, closeFleet = store.New(c, host, cfg.Entries()), c.Close
	}
	reg.MustRegister(apipod.NewAPI(snap, h))
	log.Info("mode", zap.String("mode", "split"), zap.Bool("webhook", hooked))
	work := func(ctx context.Context) error {
		// The server has drained by the time the work is stopped.
		defer closeFleet()
		var g errgroup.Group
		g.Go(func() error { h.Ready(ctx, cfg.HydrateTimeout, gate.Open); return nil })
		g.Go(func() error { return h.Run(ctx) })
		return g.Wait()
	}
	return work, fleet, nil
}
