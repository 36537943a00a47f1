package store_test

import (
	"os"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/redis/store"
)

// TestRunbookQuotesTheACLs: docs/operations.md gives the exact ACL SETUSER
// lines of store.PollerACL and store.APIACL, which the binaries' tests run
// as.
func TestRunbookQuotesTheACLs(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ user, password, rules string }{
		{"craft-poller", "POLLER-PASSWORD", store.PollerACL},
		{"craft-api", "API-PASSWORD", store.APIACL},
	} {
		line := strings.Join(store.SetUser(tc.user, tc.password, tc.rules), " ")
		if !strings.Contains(string(doc), "\n"+line+"\n") {
			t.Errorf("docs/operations.md lacks the line\n%s", line)
		}
	}
}
