package config_test

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/config"
)

// apps returns an app list of n apps for CRAFT_APPS_RELEASE_APPS.
func appList(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strings.Repeat("a", i+1) + "=App=org/repo")
	}
	return b.String()
}

func TestScheduleQuota(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		rph     float64 // want requests_per_hour, to 0.1
		quota   float64
		safe    int64 // want the safe interval in seconds
		exceeds bool
	}{
		// The runbook's old advice: 13 apps at the unauthenticated minimum.
		{"13 apps at 300 s without a token", map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "300"}, 173.3, 60, 1005, true},
		{"13 apps raised to the 300 s minimum", map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "120"}, 173.3, 60, 1005, true},
		{"13 apps at the default 1800 s", nil, 26.4, 60, 1005, false},
		{"13 apps at 810 s: the whole quota, no headroom", map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "810"}, 60, 60, 1005, false},
		{"13 apps at the default 120 s with a token", map[string]string{"CRAFT_APPS_RELEASE_GITHUB_TOKEN": "t"}, 520, 5000, 60, false},
		{"200 apps at 120 s with a token", map[string]string{"CRAFT_APPS_RELEASE_GITHUB_TOKEN": "t", "CRAFT_APPS_RELEASE_APPS": appList(200)}, 8000, 5000, 210, true},
		{"GitHub Enterprise: quota unknown", map[string]string{"CRAFT_APPS_RELEASE_GITHUB_API_URL": "https://ghe.example.com/api/v3/", "CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "10"}, 13 * 3600.0 / 7.5, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := config.LoadPoller(lookup(with(tt.env, coordVar, "false")), checkDSN)
			must(t, err)
			sc := cfg.Schedule(len(cfg.Apps))
			if d := sc.RequestsPerHour - tt.rph; d > 0.05 || d < -0.05 {
				t.Errorf("RequestsPerHour = %v, want %v", sc.RequestsPerHour, tt.rph)
			}
			if sc.QuotaPerHour != tt.quota || int64(sc.SafeInterval.Seconds()) != tt.safe {
				t.Errorf("quota %v, safe interval %v; want %v, %ds", sc.QuotaPerHour, sc.SafeInterval, tt.quota, tt.safe)
			}
			core, logs := observer.New(zapcore.InfoLevel)
			sc.Warn(zap.New(core))
			got := logs.FilterMessage("schedule exceeds github quota").All()
			if !tt.exceeds {
				if len(got) != 0 || logs.Len() != 0 {
					t.Errorf("got %d lines, want none", logs.Len())
				}
				return
			}
			if len(got) != 1 || logs.Len() != 1 || got[0].Level != zapcore.WarnLevel {
				t.Fatalf("got %+v, want one warning", logs.All())
			}
			f := got[0].ContextMap()
			if f["requests_per_hour"] != tt.rph || f["quota_per_hour"] != tt.quota || f["safe_interval_secs"] != tt.safe {
				t.Errorf("fields %v, want requests_per_hour %v, quota_per_hour %v, safe_interval_secs %d", f, tt.rph, tt.quota, tt.safe)
			}
		})
	}
}

func TestScheduleUsage(t *testing.T) {
	tests := []struct {
		name, apps string
		want       []string
	}{
		{"the built-in list", "", []string{"For the 13 configured apps", "at least 1005", "at least 60"}},
		{"one app", "a=App=org/repo", []string{"For the 1 configured apps", "at least 300", "at least 60"}},
		{"100 apps", appList(100), []string{"For the 100 configured apps", "at least 7530", "at least 120"}},
		{"a list that does not parse", "nonsense", []string{"For the 13 configured apps"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			config.ScheduleUsage(&b, lookup(env("CRAFT_APPS_RELEASE_APPS", tt.apps)))
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("got %q, want it to contain %q", b.String(), w)
				}
			}
		})
	}
}
