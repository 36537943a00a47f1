package main

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/cmd/poller/internal/admin"
	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/logsafe"
	"github.com/storytold/craft-releases/pkg/mysql"
	"github.com/storytold/craft-releases/pkg/release"
)

// metaRefresher returns the loop that publishes the renames and notices from
// MySQL to pub every CRAFT_APPS_META_REFRESH_SECS, or nil when MySQL is not
// configured. It opens the pool (without connecting) and logs its settings;
// the loop checks the server's prepared-statement cap first, never fails on
// MySQL trouble, and closes the pool when ctx ends.
func metaRefresher(cfg config.Poller, pub mysql.Publisher, log *zap.Logger) (func(context.Context) error, error) {
	if !cfg.MySQL.Enabled() {
		return nil, nil
	}
	db, err := admin.OpenMeta(cfg.MySQL, log)
	if err != nil {
		return nil, err
	}
	f, err := mysql.NewRefresher(db, pub, cfg.MySQL.Refresh, log, clock.System)
	if err != nil {
		db.Close()
		return nil, err
	}
	log.Info("mysql pool", append(db.Fields(), zap.Duration("refresh", cfg.MySQL.Refresh))...)
	return func(ctx context.Context) error {
		defer db.Close()
		checkBudget(ctx, db, cfg.MySQL, log)
		return f.Run(ctx)
	}, nil
}

// deciding is the Publisher of the meta refresher: it tells the poller
// which apps have decisions (poller.SetDecided), from each Bulletin read
// from MySQL, before publishing it, so that their histories are polled from
// the next tick on (docs/scheduling.md, "Release history").
type deciding struct {
	mysql.Publisher
	setDecided func(apps []string)
}

// PutMeta tells the poller the apps m has decisions for, then publishes m.
func (d deciding) PutMeta(ctx context.Context, m release.Bulletin, at time.Time) (bool, error) {
	apps := make([]string, 0, len(m.Decisions))
	for app, dec := range m.Decisions {
		if !dec.Empty() {
			apps = append(apps, app)
		}
	}
	d.setDecided(apps)
	return d.Publisher.PutMeta(ctx, m, at)
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
