package mariadbtest_test

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/storytold/craft-releases/test/mariadbtest"
	"github.com/storytold/craft-releases/test/testkit"
)

func TestMain(m *testing.M) { os.Exit(mariadbtest.Main(m)) }

func open(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn+"?interpolateParams=true")
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestDatabasesAreSeparate(t *testing.T) {
	srv := mariadbtest.Shared(t)
	if again := mariadbtest.Shared(t); again != srv {
		t.Fatalf("Shared returned %p, then %p; want one server per package", srv, again)
	}
	a, b := srv.NewDatabase(t), srv.NewDatabase(t)
	if a.Name == b.Name || a.User == b.User {
		t.Fatalf("two databases share a name or a user: %+v, %+v", a, b)
	}
	dbA := open(t, a.DSN())
	if _, err := dbA.ExecContext(ctx(t), "CREATE TABLE t (id INT PRIMARY KEY)"); err != nil {
		t.Fatalf("create a table in its own database: %v", err)
	}
	if _, err := dbA.ExecContext(ctx(t), "CREATE TABLE "+b.Name+".t (id INT PRIMARY KEY)"); err == nil {
		t.Errorf("user %s created a table in %s; want access denied", a.User, b.Name)
	}
}

func TestRestartKeepsData(t *testing.T) {
	srv := mariadbtest.Start(t)
	d := srv.NewDatabase(t)
	db := open(t, d.DSN())
	for _, q := range []string{"CREATE TABLE t (v VARCHAR(10))", "INSERT INTO t VALUES ('kept')"} {
		if _, err := db.ExecContext(ctx(t), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	srv.Stop()
	var v string
	err := db.QueryRowContext(ctx(t), "SELECT v FROM t").Scan(&v)
	if err == nil {
		t.Fatalf("query on a stopped server answered %q; want an error", v)
	}
	srv.Restart(t)
	if err := db.QueryRowContext(ctx(t), "SELECT v FROM t").Scan(&v); err != nil || v != "kept" {
		t.Errorf("after restart: got %q, %v; want %q", v, err, "kept")
	}
}

func TestGlobalStatus(t *testing.T) {
	srv := mariadbtest.Start(t)
	d := srv.NewDatabase(t)
	db := open(t, d.DSN())
	before := srv.GlobalStatus(t, "Prepared_stmt_count")
	stmt, err := db.PrepareContext(ctx(t), "SELECT ?")
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.GlobalStatus(t, "Prepared_stmt_count"); got != before+1 {
		t.Errorf("Prepared_stmt_count with one statement held = %d, want %d", got, before+1)
	}
	//nolint:sqlclosecheck // closing it here, not at the end, is what the test measures
	if err := stmt.Close(); err != nil {
		t.Fatal(err)
	}
	// COM_STMT_CLOSE has no reply: the server frees the statement soon after.
	if !testkit.Within(10*time.Second, func() bool { return srv.GlobalStatus(t, "Prepared_stmt_count") == before }) {
		t.Fatalf("Prepared_stmt_count after closing it = %d, want %d", srv.GlobalStatus(t, "Prepared_stmt_count"), before)
	}
	if !strings.Contains(d.Password, "@") || !strings.Contains(d.Password, "/") {
		t.Errorf("password %q lacks the characters a DSN must escape", d.Password)
	}
}

// TestHostNameThatDoesNotResolve runs a server where neither the host name nor
// localhost resolves, as in many containers: mariadb-install-db refuses to
// run there unless told not to look names up. The test binary runs itself
// again in namespaces of its own (unshare: a host name of its own, and an
// empty /etc/hosts mounted over the real one for it alone).
func TestHostNameThatDoesNotResolve(t *testing.T) {
	testkit.Integration(t)
	const inner = "MARIADBTEST_UNRESOLVABLE_HOST"
	if os.Getenv(inner) != "" {
		srv := mariadbtest.Start(t)
		var one int
		if err := open(t, srv.NewDatabase(t).DSN()).QueryRowContext(ctx(t), "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("SELECT 1 = %d, %v; want 1", one, err)
		}
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --uts --mount (CI runs as root)")
	}
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	script := `set -e
hostname nowhere-that-resolves
mount --bind "$2" /etc/hosts
if getent hosts localhost || getent hosts nowhere-that-resolves; then echo "a name still resolves" >&2; exit 1; fi
exec "$1" -test.run '^TestHostNameThatDoesNotResolve$' -test.count=1 -test.v`
	cmd := exec.Command("unshare", "--uts", "--mount", "sh", "-c", script, "sh", os.Args[0], hosts)
	cmd.Env = append(os.Environ(), inner+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "cannot change root filesystem propagation") {
		// In a chroot / is no mount point, so unshare cannot make the
		// new namespace's mounts private (and the bind must not leak).
		t.Skipf("unshare --mount does not work here (a chroot?): %s", out)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestHostNameThatDoesNotResolve") {
		t.Fatalf("the test in namespaces with no resolvable host name: %v\n%s", err, out)
	}
}
