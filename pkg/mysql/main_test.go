package mysql

import (
	"os"
	"testing"

	"github.com/storytold/craft-releases/test/mariadbtest"
	"github.com/storytold/craft-releases/test/redistest"
)

// One MariaDB server serves the package's tests, each in a database of its
// own, and redistest's pool their redis-servers.
func TestMain(m *testing.M) {
	os.Exit(redistest.Main(func() int { return mariadbtest.Main(m) }))
}
