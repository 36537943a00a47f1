package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/test/testkit"
)

// TestQuotaWarningAtStartUp starts the API standalone against GitHub's own
// API with its port taken, so that it stops after its start-up checks and
// before any request: 13 apps at 300 s without a token log one warning with
// both figures, and a pre-release channel for each doubles the requests.
func TestQuotaWarningAtStartUp(t *testing.T) {
	t.Parallel()
	for channels, rph := range map[string]float64{"": 173.3, "*": 346.7} {
		taken := testkit.Listen(t)
		vars := map[string]string{"HTTP_ADDR": taken.Addr().String(), "CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "300",
			"CRAFT_APPS_RELEASE_PRERELEASE_APPS": channels}
		logs := &testkit.Buffer{}
		err := run(context.Background(), nil, func(k string) string { return vars[k] }, io.Discard, logs)
		if err == nil || !strings.Contains(err.Error(), "listen") {
			t.Fatalf("run got %v, want the port taken", err)
		}
		warnings := logs.Lines("schedule exceeds github quota")
		if len(warnings) != 1 || warnings[0]["requests_per_hour"] != rph || warnings[0]["quota_per_hour"] != float64(60) {
			t.Errorf("channels %q: got %v, want one warning with requests_per_hour %v and quota_per_hour 60", channels, warnings, rph)
		}
	}
}
