package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/mysql"
	"github.com/storytold/craft-releases/test/testkit"
)

// hangGuard only stops a test whose query hangs; it is no measure of speed.
const hangGuard = 30 * time.Second

// live runs db.Live in a goroutine and returns its error, failing the test if
// it does not return within hangGuard.
func live(t testing.TB, db *mysql.DB) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, _, err := db.Live(context.Background(), noon)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(hangGuard):
		t.Fatalf("Live still running after %v: a query without a timeout", hangGuard)
		return nil
	}
}

// TestSilentServer: a server that accepts connections and never answers costs
// a query its timeout, and an error.
func TestSilentServer(t *testing.T) {
	testkit.Integration(t)
	l := testkit.Listen(t)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	db := open(t, "craft:pw@tcp("+l.Addr().String()+")/craft", time.Second)
	if err := live(t, db); err == nil {
		t.Fatal("Live against a silent server worked; want an error")
	}
}

// TestSlowQuery: a table locked by another session makes the read wait; the
// query timeout ends it, and the pool works again once the lock is gone.
func TestSlowQuery(t *testing.T) {
	testkit.Integration(t)
	_, d := migratedDB(t, nil)
	db := open(t, d.DSN(), time.Second)
	ctx := context.Background()
	addNotice(t, db, mysql.Notice{Kind: mysql.KindAlert, Title: "t"}, noon.Add(-time.Hour))

	conn, err := raw(t, d).Conn(ctx)
	must(t, err)
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "LOCK TABLES craft_alerts WRITE"); err != nil {
		t.Fatal(err)
	}
	if err := live(t, db); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Live on a locked table = %v, want the query timeout", err)
	}
	if _, err := conn.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
		t.Fatal(err)
	}
	if err := live(t, db); err != nil {
		t.Errorf("Live after the lock is gone = %v, want it to work", err)
	}
}
