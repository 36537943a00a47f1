package main

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/cmd/poller/internal/admin"
	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/logsafe"
	"github.com/storytold/craft-releases/pkg/mysql"
	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
)

// metaRefresher returns the loop that publishes the renames, notices and
// decisions from MySQL to pub every CRAFT_APPS_META_REFRESH_SECS, and what
// wakes it for a refresh now; nil for both when MySQL is not configured. It
// opens the pool (without connecting) and logs its settings; the loop
// checks the server's prepared-statement cap first, never fails on MySQL
// trouble, and closes the pool when ctx ends.
func metaRefresher(cfg config.Poller, pub mysql.Publisher, log *zap.Logger, opts ...mysql.RefresherOption) (run func(context.Context) error, wake func(), err error) {
	if !cfg.MySQL.Enabled() {
		return nil, nil, nil
	}
	db, err := admin.OpenMeta(cfg.MySQL, log)
	if err != nil {
		return nil, nil, err
	}
	f, err := mysql.NewRefresher(db, pub, cfg.MySQL.Refresh, log, clock.System, opts...)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	log.Info("mysql pool", append(db.Fields(), zap.Duration("refresh", cfg.MySQL.Refresh))...)
	return func(ctx context.Context) error {
		defer db.Close()
		checkBudget(ctx, db, cfg.MySQL, log)
		return f.Run(ctx)
	}, f.Wake, nil
}

// refreshing returns what a refresh request from Redis is handed to: p, and,
// for a new request for an app's history entry (which an operator's verb
// files as it decides), wake too (nil: nothing), so that this poller reads
// the new decision from MySQL at once rather than at its next refresh. The
// same request handed again (the watch's rescans) wakes nothing.
func refreshing(p *poller.Poller, wake func()) func(app string, r release.Refresh) {
	var mu sync.Mutex
	seen := map[string]time.Time{} // history entry key → its newest request's time
	return func(app string, r release.Refresh) {
		p.Refresh(app, r)
		if _, ch := release.AppOf(app); ch != release.HistoryChannel || wake == nil {
			return
		}
		mu.Lock()
		fresh := !r.At.Equal(seen[app])
		seen[app] = r.At
		mu.Unlock()
		if fresh {
			wake()
		}
	}
}

// followDecisions returns what the meta refresher calls with each Bulletin
// it read from MySQL: it tells p which apps have decisions
// (poller.SetDecided), so that their histories are polled from the next
// tick on (docs/scheduling.md, "Release history"); with changes (a
// poller.Config.Changes, nil without Cloudflare), purges what an app serves
// whenever its decisions differ from the ones this poller read before (its
// first read, at start, is the baseline: a restart purges nothing): its
// latest release's paths, with the Tauri answers to an app at the release
// before it; and warns on log once of each tag a decision names that the
// app's releases do not hold, which the pods do not apply.
func followDecisions(p *poller.Poller, changes func(app string, old, new *release.Release), log *zap.Logger) func(release.Bulletin) {
	var last map[string]release.Decisions
	read := false               // a first read was taken as the baseline
	warned := map[string]bool{} // "app tag" of the unfound tags warned of
	return func(m release.Bulletin) {
		apps := make([]string, 0, len(m.Decisions))
		for app, d := range m.Decisions {
			if !d.Empty() {
				apps = append(apps, app)
			}
		}
		p.SetDecided(apps)
		if changes != nil && read {
			for _, app := range changedApps(last, m.Decisions) {
				latest := p.Entry(app).Release
				changes(app, previous(p.Entry(release.App{Key: app}.HistoryEntry().Key).History, latest), latest)
			}
		}
		last, read = m.Decisions, true
		now := map[string]bool{}
		for _, app := range apps {
			for _, tag := range unfound(m.Decisions[app], p.Entry(app).Release, p.Entry(release.App{Key: app}.HistoryEntry().Key).History) {
				if now[app+" "+tag] = true; !warned[app+" "+tag] {
					log.Warn("release decision names a tag not found, not applied", zap.String("app", app), logsafe.String("tag", tag))
				}
			}
		}
		warned = now
	}
}

// unfound returns the tags d names that neither latest nor h holds, as the
// pods flag them (release.Decide): none while h was not read yet, and a
// withdrawn tag only while h is not full (one that aged out of it is not).
func unfound(d release.Decisions, latest *release.Release, h *release.History) []string {
	if h == nil {
		return nil
	}
	var tags []string
	if d.Rollout != nil {
		tags = append(tags, d.Rollout.Tag)
	}
	if len(h.List()) < release.MaxHistory {
		for _, w := range d.Withdrawn {
			tags = append(tags, w.Tag)
		}
	}
	return slices.DeleteFunc(tags, func(tag string) bool {
		return latest != nil && latest.Tag == tag || slices.Contains(h.Tags(), tag)
	})
}

// changedApps returns the apps whose decisions differ between old and new,
// sorted.
func changedApps(old, new map[string]release.Decisions) []string {
	var apps []string
	for _, m := range []map[string]release.Decisions{old, new} {
		for app := range m {
			if !slices.Contains(apps, app) && !reflect.DeepEqual(old[app], new[app]) {
				apps = append(apps, app)
			}
		}
	}
	slices.Sort(apps)
	return apps
}

// previous returns the newest release of h published before latest (any,
// without latest); nil for none.
func previous(h *release.History, latest *release.Release) *release.Release {
	for _, r := range h.List() {
		if latest == nil || r.Tag != latest.Tag && (latest.PublishedAt == nil || r.PublishedAt.Before(latest.PublishedAt.Time)) {
			return r
		}
	}
	return nil
}

// checkBudget warns when the fleet could approach the server's cap on
// prepared statements. It runs once, at start-up; a MySQL that cannot answer
// then is logged, and the refresher carries on.
func checkBudget(ctx context.Context, db *mysql.DB, m config.MySQL, log *zap.Logger) {
	b, err := db.Budget(ctx, m.Replicas)
	if err != nil {
		log.Warn("could not check max_prepared_stmt_count", logsafe.NamedError("err", err))
		return
	}
	fields := []zap.Field{
		zap.Int64("max_prepared_stmt_count", b.Max),
		zap.Int64("prepared_stmt_count", b.Held),
		zap.Int64("fleet_worst_case", b.Fleet),
		zap.String("formula", fmt.Sprintf("%d replicas × %d connections × %d statement", m.Replicas, m.MaxConns, mysql.StatementsPerConnection)),
	}
	if b.Tight() {
		log.Warn("the poller fleet could approach max_prepared_stmt_count", fields...)
		return
	}
	log.Info("prepared statements within the server's cap", fields...)
}
