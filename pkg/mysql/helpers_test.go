package mysql_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/mysql"
	"github.com/storytold/craft-releases/test/mariadbtest"
)

var noon = time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)

// migrated returns a pool on a fresh, migrated database of srv (the shared
// server when nil), closed by t.Cleanup.
func migrated(t testing.TB, srv *mariadbtest.Server) *mysql.DB {
	t.Helper()
	db, _ := migratedDB(t, srv)
	return db
}

// migratedDB is migrated with the database, for writing rows by hand.
func migratedDB(t testing.TB, srv *mariadbtest.Server) (*mysql.DB, mariadbtest.Database) {
	t.Helper()
	if srv == nil {
		srv = mariadbtest.Shared(t)
	}
	d := srv.NewDatabase(t)
	db := open(t, d.DSN(), 5*time.Second)
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return db, d
}

// open returns a pool whose queries end after timeout, closed by t.Cleanup.
func open(t testing.TB, dsn string, timeout time.Duration) *mysql.DB {
	t.Helper()
	db, err := mysql.Open(dsn, mysql.Options{QueryTimeout: timeout})
	must(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func addNotice(t testing.TB, db *mysql.DB, n mysql.Notice, now time.Time) mysql.Notice {
	t.Helper()
	got, err := db.AddNotice(context.Background(), n, now)
	if err != nil {
		t.Fatalf("add %+v: %v", n, err)
	}
	return got
}

func addRename(t testing.TB, db *mysql.DB, r mysql.Rename, now time.Time) mysql.Rename {
	t.Helper()
	got, err := db.AddRename(context.Background(), r, now)
	if err != nil {
		t.Fatalf("add %+v: %v", r, err)
	}
	return got
}

// raw returns a plain database/sql pool of d's user, for writing rows by
// hand as an operator might; t.Cleanup closes it.
func raw(t testing.TB, d mariadbtest.Database) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", d.DSN()+"?interpolateParams=true")
	must(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
