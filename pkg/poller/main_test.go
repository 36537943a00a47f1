package poller_test

import (
	"os"
	"testing"

	"github.com/storytold/craft-releases/test/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m.Run)) }
