package main

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/test/testkit"
)

// TestQuotaWarningAtStartUp starts the poller against GitHub's own API with
// its port taken, so that it stops after its start-up checks and before any
// request: a schedule over the quota logs one warning with both figures, a
// schedule within it none.
func TestQuotaWarningAtStartUp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		vars  map[string]string
		rph   float64 // 0: no warning
		quota float64
	}{
		{"13 apps at 300 s without a token", map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "300"}, 173.3, 60},
		{"13 apps raised to the 300 s minimum", map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "120"}, 173.3, 60},
		{"13 apps at 810 s without a token", map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "810"}, 0, 0},
		{"13 apps at 120 s with a token", map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "120", "CRAFT_APPS_RELEASE_GITHUB_TOKEN": "t"}, 0, 0},
		{"13 apps at 810 s, 3 with a pre-release channel", map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "810",
			"CRAFT_APPS_RELEASE_PRERELEASE_APPS": "photocraft,vectorcraft,filmcraft"}, 73.8, 60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			taken, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer taken.Close()
			vars := map[string]string{
				"REDIS_URL": "redis://127.0.0.1:1", // never dialled: the poller stops first
				"HTTP_ADDR": taken.Addr().String(),
			}
			for k, v := range tt.vars {
				vars[k] = v
			}
			logs := &testkit.Buffer{}
			err = run(context.Background(), nil, func(k string) string { return vars[k] }, io.Discard, logs)
			if err == nil || !strings.Contains(err.Error(), "listen") {
				t.Fatalf("run got %v, want the port taken", err)
			}
			warnings := logs.Lines("schedule exceeds github quota")
			if tt.rph == 0 {
				if len(warnings) != 0 {
					t.Errorf("got %v, want no warning", warnings)
				}
				return
			}
			if len(warnings) != 1 || warnings[0]["level"] != "warn" || warnings[0]["requests_per_hour"] != tt.rph || warnings[0]["quota_per_hour"] != tt.quota {
				t.Errorf("got %v, want one warning with requests_per_hour %v and quota_per_hour %v", warnings, tt.rph, tt.quota)
			}
		})
	}
}
