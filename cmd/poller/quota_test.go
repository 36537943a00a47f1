package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/test/testkit"
)

// TestQuotaWarningAtStartUp starts the poller against GitHub's own API with
// its port taken, so that it stops after its start-up checks and before any
// request: a schedule over the quota, counting each pre-release channel as
// an entry of its own, logs one warning with both figures. The figures of
// each schedule are pkg/config's TestScheduleQuota.
func TestQuotaWarningAtStartUp(t *testing.T) {
	t.Parallel()
	taken := testkit.Listen(t)
	vars := map[string]string{
		"REDIS_URL":                             "redis://127.0.0.1:1", // never dialled: the poller stops first
		"HTTP_ADDR":                             taken.Addr().String(),
		"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "810",
		"CRAFT_APPS_RELEASE_PRERELEASE_APPS":    "photocraft,vectorcraft,filmcraft",
	}
	logs := &testkit.Buffer{}
	err := run(context.Background(), nil, func(k string) string { return vars[k] }, io.Discard, logs)
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("run got %v, want the port taken", err)
	}
	warnings := logs.Lines("schedule exceeds github quota")
	if len(warnings) != 1 || warnings[0]["level"] != "warn" || warnings[0]["requests_per_hour"] != 73.8 || warnings[0]["quota_per_hour"] != float64(60) {
		t.Errorf("got %v, want one warning with requests_per_hour 73.8 and quota_per_hour 60", warnings)
	}
}
