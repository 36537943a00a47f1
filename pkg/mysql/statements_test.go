package mysql

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/mariadbtest"
)

type discard struct{}

func (discard) PutMeta(context.Context, release.Bulletin, time.Time) (bool, error) { return true, nil }

// TestNoServerSidePreparedStatements is the pool's promise to the incident:
// across many refreshes from several goroutines, and every query the
// subcommands run, the server holds no prepared statement (SHOW GLOBAL STATUS
// LIKE 'Prepared_stmt_count' stays 0) and none is ever prepared
// (Com_stmt_prepare does not move). The second part shows that the same
// measure sees a pool without interpolateParams (mariadbtest's
// TestGlobalStatus shows that Prepared_stmt_count sees a statement held).
func TestNoServerSidePreparedStatements(t *testing.T) {
	srv := mariadbtest.Shared(t)
	d := srv.NewDatabase(t)
	db, err := Open(d.DSN(), Options{MaxConns: 4})
	must(t, err)
	defer db.Close()
	ctx := context.Background()
	now := time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)
	_, err = db.Migrate(ctx)
	must(t, err)
	alert, err := db.AddNotice(ctx, Notice{Kind: KindAlert, Title: "t", Link: "https://a.example/?q='x'"}, now)
	must(t, err)
	_, err = db.AddRename(ctx, Rename{Kind: KindAppRename, OldName: "a'b", NewName: `c"d\e`}, now)
	must(t, err)

	held := srv.GlobalStatus(t, "Prepared_stmt_count")
	prepared := srv.GlobalStatus(t, "Com_stmt_prepare")
	if held != 0 {
		t.Fatalf("Prepared_stmt_count = %d before the refreshes; the server is not idle", held)
	}

	f, err := NewRefresher(db, discard{}, time.Minute, nil, fakeclock.New(now))
	must(t, err)
	const goroutines, refreshes = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*refreshes)
	for range goroutines {
		wg.Go(func() {
			for range refreshes {
				if err := f.Refresh(ctx); err != nil {
					errs <- err
				}
				// A reader of the pool's own statistics, as a poller would.
				if _, _, err := db.Live(ctx, now); err != nil {
					errs <- err
				}
			}
		})
	}
	// Sample what the server holds while the refreshes run.
	var maxHeld int64
	for range 20 {
		maxHeld = max(maxHeld, srv.GlobalStatus(t, "Prepared_stmt_count"))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("refresh: %v", err)
	}
	// The subcommands' queries and the start-up check.
	_, err = db.Notices(ctx)
	must(t, err)
	_, err = db.Renames(ctx)
	must(t, err)
	_, err = db.EndNotice(ctx, KindAlert, alert.ID, now)
	must(t, err)
	if _, err := db.EndNotice(ctx, KindAlert, 999, now); !errors.Is(err, ErrNotFound) {
		t.Fatalf("EndNotice of nothing = %v, want ErrNotFound", err)
	}
	_, err = db.Budget(ctx, 3)
	must(t, err)

	tests := []struct {
		name      string
		got, want int64
	}{
		{"Prepared_stmt_count sampled during the refreshes (max)", maxHeld, 0},
		{"Prepared_stmt_count after them", srv.GlobalStatus(t, "Prepared_stmt_count"), 0},
		{"Com_stmt_prepare moved by", srv.GlobalStatus(t, "Com_stmt_prepare") - prepared, 0},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
	t.Logf("%d refreshes and %d reads by 4 goroutines: %d prepared statements held at most, %d prepared in all",
		goroutines*refreshes, goroutines*refreshes, maxHeld, srv.GlobalStatus(t, "Com_stmt_prepare")-prepared)

	// The same reads through a pool that lets database/sql prepare: the
	// measures above would have seen it.
	cfg, err := mysqldriver.ParseDSN(d.DSN())
	must(t, err)
	cfg.ParseTime = true
	connector, err := mysqldriver.NewConnector(cfg)
	must(t, err)
	plain := &DB{db: sql.OpenDB(connector), opts: db.opts}
	defer plain.Close()
	before := srv.GlobalStatus(t, "Com_stmt_prepare")
	for range 5 {
		_, _, err := plain.Live(ctx, now)
		must(t, err)
	}
	if got := srv.GlobalStatus(t, "Com_stmt_prepare") - before; got < 5 {
		t.Errorf("without interpolateParams: Com_stmt_prepare moved by %d, want at least 5", got)
	}
}

func TestBudget(t *testing.T) {
	srv := mariadbtest.Shared(t)
	db, err := Open(srv.NewDatabase(t).DSN(), Options{MaxConns: 4})
	must(t, err)
	defer db.Close()
	b, err := db.Budget(context.Background(), 3)
	must(t, err)
	if want := (Budget{Max: 16382, Held: 0, Fleet: 12}); b != want {
		t.Errorf("Budget(3 replicas × 4 connections) = %+v, want %+v (MariaDB's default cap)", b, want)
	}
	if b.Tight() {
		t.Errorf("%+v is tight; want room to spare with the defaults", b)
	}
	tests := []struct {
		name string
		b    Budget
		want bool
	}{
		{"the defaults", Budget{Max: 16382, Fleet: 12}, false},
		{"a fleet of a tenth of the cap", Budget{Max: 1000, Fleet: 100}, false},
		{"a fleet over a tenth of the cap", Budget{Max: 1000, Fleet: 101}, true},
		{"a server nine tenths full", Budget{Max: 16382, Held: 14731, Fleet: 12}, false},
		{"a server over nine tenths full", Budget{Max: 16382, Held: 14732, Fleet: 12}, true},
		{"a cap of zero", Budget{Max: 0, Fleet: 1}, true},
	}
	for _, tt := range tests {
		if got := tt.b.Tight(); got != tt.want {
			t.Errorf("%s: %+v.Tight() = %v, want %v", tt.name, tt.b, got, tt.want)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
