package mysql

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"time"

	"github.com/pressly/goose/v3"
)

// migrations holds the schema's migrations, applied in the order of their
// numbers by goose.
//
//go:embed migrations/*.sql
var migrations embed.FS

// migrationTable is where goose records the applied migrations, named for
// this service so that it can share a database with another goose user.
const migrationTable = "craft_goose_db_version"

// migrateTimeout bounds a whole migration run; DDL may take longer than a
// query.
const migrateTimeout = 5 * time.Minute

// Migrate applies every migration the database lacks and returns the names
// of those it applied, none when the schema is current: running it again is
// harmless. A failed migration stops the run; the error names it.
func (d *DB) Migrate(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, migrateTimeout)
	defer cancel()
	p, err := d.migrator()
	if err != nil {
		return nil, err
	}
	results, err := p.Up(ctx)
	var applied []string
	for _, r := range results {
		if r.Error == nil {
			applied = append(applied, r.Source.Path)
		}
	}
	if err != nil {
		return applied, fmt.Errorf("migrate: %w", err)
	}
	return applied, nil
}

// SchemaVersion returns the version of the newest applied migration (0 for
// none) and of the newest migration this binary has.
func (d *DB) SchemaVersion(ctx context.Context) (current, latest int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	p, err := d.migrator()
	if err != nil {
		return 0, 0, err
	}
	current, latest, err = p.GetVersions(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("schema version: %w", err)
	}
	return current, latest, nil
}

func (d *DB) migrator() (*goose.Provider, error) {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectMySQL, d.db, sub,
		goose.WithTableName(migrationTable),
		goose.WithDisableGlobalRegistry(true),
		goose.WithLogger(goose.NopLogger()),
	)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}
