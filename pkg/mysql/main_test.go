package mysql

import (
	"os"
	"testing"

	"github.com/storytold/craft-releases/test/mariadbtest"
)

// One MariaDB server serves the package's tests, each in a database of its own.
func TestMain(m *testing.M) { os.Exit(mariadbtest.Main(m)) }
