// Command poller is the only part of the service that talks to GitHub. Its
// replicas share the work through Redis (claims, guarded writes, a fleet-wide
// backoff) and publish one hash per app for the API pods. `poller status`
// prints what the fleet shares. Every setting is an environment variable: run
// it with --help for the list.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/storytold/craft-releases/cmd/poller/internal/admin"
	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/cloudflare"
	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/github"
	"github.com/storytold/craft-releases/pkg/logsafe"
	"github.com/storytold/craft-releases/pkg/metrics"
	"github.com/storytold/craft-releases/pkg/mysql"
	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/routes"
	"github.com/storytold/craft-releases/pkg/updates/companion"
)

// version is stamped at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() { daemon.Main("poller", run) }

// run owns the process: `poller` polls until ctx ends (SIGINT or SIGTERM);
// `poller status` and the other subcommands of package admin do their one
// thing and exit.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "--help", "help":
			config.Usage(stdout, "poller")
			config.ScheduleUsage(stdout, getenv)
			admin.Usage(stdout)
			return nil
		}
		return admin.Run(ctx, args, getenv, stdout, stderr, clock.System)
	}
	cfg, warnings, err := config.LoadPoller(getenv, mysql.DSN)
	if err != nil {
		return err
	}
	host, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("hostname: %w", err)
	}
	log := cfg.Logger(stderr).With(zap.String("binary", "poller"), zap.String("host", host))
	defer func() { _ = log.Sync() }()
	config.LogStart(log, warnings, append(cfg.Fields(), zap.String("version", version))...)

	return poll(ctx, cfg, host, log)
}

// poll builds the poller of cfg and runs it, with its health port and its
// background work, until ctx ends.
func poll(ctx context.Context, cfg config.Poller, host string, log *zap.Logger) error {
	src, err := github.New(github.Options{
		BaseURL:   cfg.GitHubAPIURL,
		Token:     cfg.GitHubToken.Reveal(),
		UserAgent: "craft-releases-poller/" + version,
	})
	if err != nil {
		return err
	}
	// A registry of our own, not the global one, so that tests can run
	// several binaries in one process.
	reg := metrics.NewRegistry("poller", version, cfg.PollInterval)
	observer := metrics.NewPoller(cfg.Entries())
	reg.MustRegister(observer)
	sched := cfg.Schedule(release.Requests(cfg.Apps))
	if cfg.Polling.Enabled {
		sched.Warn(log)
		observer.Schedule(sched.RequestsPerHour, sched.QuotaPerHour)
	}
	pc := poller.Config{
		Apps:         cfg.Entries(),
		Timing:       cfg.Timing(),
		QuotaPerHour: sched.QuotaPerHour,
		Source:       src,
		Coordinate:   cfg.CoordinationEnabled,
		Observer:     observer,
		Logger:       log,
		Companions:   companion.Names,
		PublicKeys:   cfg.PublicKeys,
	}
	var refreshMeta func(context.Context) error // nil without MySQL
	var wakeMeta func()                         // nil without MySQL
	var fleet *store.Store                      // nil without Redis
	if cfg.Redis.Configured() {
		client := redis.Open(cfg.Redis.Options)
		defer client.Close()
		fleet = newStore(client, host, cfg, log, observer, &pc)
	}
	purge, err := purger(cfg, reg, log, &pc)
	if err != nil {
		return err
	}
	p, err := poller.New(pc)
	if err != nil {
		return err
	}
	if fleet != nil {
		if refreshMeta, wakeMeta, err = metaRefresher(cfg, fleet, log, mysql.WithOnPublish(followDecisions(p, pc.Changes, log))); err != nil {
			return err
		}
	}

	// Listen before the start-up load from Redis, so /healthz answers from
	// the first second.
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.HTTPAddr, err)
	}
	log.Info("listening", zap.String("addr", ln.Addr().String()))
	gate := &daemon.Gate{}
	health := daemon.NewHealth(gate, metrics.Handler(reg, log), log, nil)

	work := polling(cfg, p, fleet, gate, log, wakeMeta)
	if refreshMeta != nil {
		// Its own goroutine: MySQL trouble never holds up polling.
		work = append(work, refreshMeta)
	}
	if purge != nil {
		// Its own goroutine too: a slow or failing Cloudflare never holds
		// up polling.
		work = append(work, purge)
	}
	err = daemon.Run(ctx, daemon.Plan{
		Servers:         []daemon.Endpoint{{Handler: health, Listener: ln}},
		Work:            work,
		StopWorkFirst:   true, // a signal abandons the GitHub request under way
		Gate:            gate,
		ShutdownTimeout: cfg.ShutdownTimeout,
		Log:             log,
	})
	if err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// newStore returns the fleet's Store on client and makes it pc's Fleet, each
// read of the fleet's state bounded by client's call timeout. The
// poller and its Store tell one time: Redis's, once a node's clock is off by
// more than release.MaxSkew.
func newStore(client *redis.Conn, host string, cfg config.Poller, log *zap.Logger, observer *metrics.Poller, pc *poller.Config) *store.Store {
	fleetClock := clock.NewCorrected(nil)
	pc.Clock = fleetClock
	st := store.New(client, host, cfg.Entries(), store.WithLogger(log), store.WithModeObserver(observer.WritePath),
		store.WithClock(fleetClock), store.WithRefusals(store.NewRefusals(log, observer.Refused)))
	pc.Fleet, pc.ReadTimeout = st, client.Timeout()
	return st
}

// purger returns the Cloudflare purge's work, nil without Cloudflare, and
// makes pc send it each change. The purge of a release's change is sent by
// the one poller whose write made it (poller.Config.Changes), a moment after
// the write, once the API pods have hydrated it; that of an operator's
// decision, by each poller as it reads the decision (followDecisions).
func purger(cfg config.Poller, reg prometheus.Registerer, log *zap.Logger, pc *poller.Config) (func(context.Context) error, error) {
	if !cfg.Cloudflare.Enabled() {
		return nil, nil
	}
	purges := metrics.NewPurges()
	reg.MustRegister(purges)
	c := cfg.Cloudflare.Purger()
	c.Observer, c.Logger = purges, log
	purger, err := cloudflare.New(c)
	if err != nil {
		return nil, err
	}
	pc.Changes = func(app string, old, new *release.Release) { purger.Purge(routes.PurgePaths(app, old, new)) }
	return purger.Run, nil
}

// polling returns the work of polling: opening gate once the start-up load
// was tried (and the fleet accepted this poller), the tick loop, and the
// webhook's refresh requests from Redis; with polling disabled, only the
// gate, open at once.
func polling(cfg config.Poller, p *poller.Poller, fleet *store.Store, gate *daemon.Gate, log *zap.Logger, wakeMeta func()) []func(context.Context) error {
	work := []func(context.Context) error{func(ctx context.Context) error {
		select {
		case <-p.Loaded():
			if accepted(ctx, fleet, log) {
				gate.Open()
			}
		case <-ctx.Done():
		}
		return nil
	}}
	if !cfg.Polling.Enabled {
		log.Info("polling disabled")
		gate.Open()
		return work
	}
	// Cancelling ctx abandons the request under way: every shared write is
	// one script or one transaction, so none is ever left half-written.
	work = append(work, p.Run)
	if fleet != nil {
		// The webhook's refresh requests, recorded in Redis by the API pods.
		keys := release.Keys(cfg.Entries())
		work = append(work, func(ctx context.Context) error {
			// Redis trouble is the poller's to report; this only retries.
			return fleet.WatchRefreshes(ctx, keys, refreshing(p, wakeMeta), func(err error) {
				log.Debug("refresh requests unreadable", logsafe.NamedError("err", err))
			})
		})
	}
	return work
}
