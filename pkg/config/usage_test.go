package config_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/config"
)

func TestNames(t *testing.T) {
	// Every variable of docs/config.md for each binary, in its tables' order.
	shared := []string{
		"REDIS_URL",
		"REDIS_TLS_CA_FILE",
		"REDIS_TLS_CERT_FILE",
		"REDIS_TLS_KEY_FILE",
		"CRAFT_APPS_RELEASE_APPS", "CRAFT_APPS_RELEASE_PRERELEASE_APPS", "CRAFT_APPS_RELEASE_TAG_PREFIXES", "CRAFT_APPS_RELEASE_TAURI_PUBKEYS",
		"LOG_LEVEL",
		"LOG_FORMAT",
		"CRAFT_APPS_RELEASE_POLLING_ENABLED",
		"CRAFT_APPS_RELEASE_COORDINATION_ENABLED",
		"CRAFT_APPS_RELEASE_GITHUB_API_URL",
		"CRAFT_APPS_RELEASE_GITHUB_TOKEN",
		"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS",
		"CRAFT_APPS_RELEASE_MAX_BACKOFF_SECS",
		"CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS",
		"CRAFT_APPS_RELEASE_TICK_SECS",
		"CRAFT_APPS_RELEASE_REQUEST_SPACING_MS",
	}
	tests := []struct {
		binary string
		want   []string
	}{
		{"api", append(slices.Clone(shared), "HTTP_ADDR", "METRICS_ADDR", "HTTP_MAX_CONNECTIONS", "CRAFT_APPS_HYDRATE_TIMEOUT_SECS", "SHUTDOWN_TIMEOUT_SECS",
			"CRAFT_APPS_RELEASE_WEBHOOK_SECRET", "CLOUDFLARE_API_TOKEN", "CLOUDFLARE_ZONE_ID", "CLOUDFLARE_API_URL", "CRAFT_APPS_PUBLIC_URL")},
		{"poller", append(slices.Clone(shared), "HTTP_ADDR", "SHUTDOWN_TIMEOUT_SECS",
			"MYSQL_DSN", "MYSQL_URL", "MYSQL_MAX_CONNECTIONS", "MYSQL_MAX_LIFETIME_SECS", "MYSQL_MAX_LIFETIME_SECONDS",
			"MYSQL_QUERY_TIMEOUT_SECS", "MYSQL_POLLER_REPLICAS", "CRAFT_APPS_META_REFRESH_SECS",
			"CLOUDFLARE_API_TOKEN", "CLOUDFLARE_ZONE_ID", "CLOUDFLARE_API_URL", "CRAFT_APPS_PUBLIC_URL")},
		{"web", nil},
		{"", nil},
	}
	for _, tc := range tests {
		t.Run(tc.binary, func(t *testing.T) {
			if got := config.Names(tc.binary); !slices.Equal(got, tc.want) {
				t.Errorf("Names(%q):\n got %q\nwant %q", tc.binary, got, tc.want)
			}
		})
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		binary string
		want   map[string]string // variable → the default its line shows
	}{
		{"api", map[string]string{
			"REDIS_URL":                               "(empty)",
			"CRAFT_APPS_RELEASE_APPS":                 "the 13 Craft Apps",
			"CRAFT_APPS_RELEASE_GITHUB_API_URL":       "https://api.github.com/",
			"LOG_LEVEL":                               "info",
			"LOG_FORMAT":                              "json",
			"CRAFT_APPS_RELEASE_POLLING_ENABLED":      "true",
			"CRAFT_APPS_RELEASE_COORDINATION_ENABLED": "true",
			"CRAFT_APPS_RELEASE_GITHUB_TOKEN":         "(unset)",
			"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS":   "120 with a token, 1800 without",
			"CRAFT_APPS_RELEASE_MAX_BACKOFF_SECS":     "14400",
			"CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS":  "30",
			"CRAFT_APPS_RELEASE_TICK_SECS":            "30",
			"CRAFT_APPS_RELEASE_REQUEST_SPACING_MS":   "1000",
			"HTTP_ADDR":                               ":8080",
			"METRICS_ADDR":                            ":9090",
			"HTTP_MAX_CONNECTIONS":                    "1024",
			"CRAFT_APPS_HYDRATE_TIMEOUT_SECS":         "10",
			"SHUTDOWN_TIMEOUT_SECS":                   "15",
		}},
		{"poller", map[string]string{
			"REDIS_URL":                             "(empty)",
			"CRAFT_APPS_RELEASE_GITHUB_TOKEN":       "(unset)",
			"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "120 with a token, 1800 without",
			"HTTP_ADDR":                             ":9090",
			"SHUTDOWN_TIMEOUT_SECS":                 "15",
			"MYSQL_DSN":                             "(unset)",
			"MYSQL_URL":                             "(unset)",
			"MYSQL_MAX_CONNECTIONS":                 "4",
			"MYSQL_MAX_LIFETIME_SECS":               "600",
			"MYSQL_MAX_LIFETIME_SECONDS":            "(unset)",
			"MYSQL_QUERY_TIMEOUT_SECS":              "5",
			"MYSQL_POLLER_REPLICAS":                 "3",
			"CRAFT_APPS_META_REFRESH_SECS":          "60",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.binary, func(t *testing.T) {
			var buf bytes.Buffer
			config.Usage(&buf, tc.binary)
			lines := usageLines(buf.String())
			for _, name := range config.Names(tc.binary) {
				line, ok := lines[name]
				if !ok {
					t.Errorf("Usage(%q) has no line for %s:\n%s", tc.binary, name, buf.String())
					continue
				}
				def, help, ok := strings.Cut(line, "  ")
				if !ok || strings.TrimSpace(def) == "" || strings.TrimSpace(help) == "" {
					t.Errorf("Usage(%q) line for %s = %q, want a default and a description", tc.binary, name, line)
				}
				if want, ok := tc.want[name]; ok && def != want {
					t.Errorf("Usage(%q) default of %s = %q, want %q", tc.binary, name, def, want)
				}
			}
			if len(lines) != len(config.Names(tc.binary)) {
				t.Errorf("Usage(%q) lists %d variables, want %d:\n%s", tc.binary, len(lines), len(config.Names(tc.binary)), buf.String())
			}
		})
	}
	t.Run("unknown binary", func(t *testing.T) {
		var buf bytes.Buffer
		config.Usage(&buf, "web")
		if buf.Len() != 0 {
			t.Errorf("Usage(web) wrote %q, want nothing", buf.String())
		}
	})
}

// usageLines maps each variable of a Usage table to the rest of its line,
// leading spaces removed.
func usageLines(out string) map[string]string {
	lines := make(map[string]string)
	for line := range strings.Lines(out) {
		name, rest, ok := strings.Cut(strings.TrimRight(line, "\n"), " ")
		if !ok || name != strings.ToUpper(name) || !strings.Contains(name, "_") {
			continue
		}
		lines[name] = strings.TrimLeft(rest, " ")
	}
	return lines
}
