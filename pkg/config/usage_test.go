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
	shared := []string{"REDIS_URL", "REDIS_TLS_CA_FILE", "REDIS_TLS_CERT_FILE", "REDIS_TLS_KEY_FILE",
		"CRAFT_APPS_RELEASE_APPS", "CRAFT_APPS_RELEASE_PRERELEASE_APPS", "CRAFT_APPS_RELEASE_TAG_PREFIXES", "CRAFT_APPS_RELEASE_TAURI_PUBKEYS",
		"LOG_LEVEL", "LOG_FORMAT", "CRAFT_APPS_RELEASE_POLLING_ENABLED", coordVar, apiURLVar, tokenVar,
		"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS", "CRAFT_APPS_RELEASE_MAX_BACKOFF_SECS", "CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS",
		"CRAFT_APPS_RELEASE_TICK_SECS", "CRAFT_APPS_RELEASE_REQUEST_SPACING_MS"}
	cloudflare := []string{"CLOUDFLARE_API_TOKEN", "CLOUDFLARE_ZONE_ID", "CLOUDFLARE_API_URL", "CRAFT_APPS_PUBLIC_URL"}
	for binary, want := range map[string][]string{
		"api": slices.Concat(shared, []string{"HTTP_ADDR", "METRICS_ADDR", "HTTP_MAX_CONNECTIONS", "CRAFT_APPS_HYDRATE_TIMEOUT_SECS",
			"SHUTDOWN_TIMEOUT_SECS", "CRAFT_APPS_RELEASE_WEBHOOK_SECRET"}, cloudflare),
		"poller": slices.Concat(shared, []string{"HTTP_ADDR", "SHUTDOWN_TIMEOUT_SECS", "MYSQL_DSN", "MYSQL_URL", "MYSQL_MAX_CONNECTIONS",
			"MYSQL_MAX_LIFETIME_SECS", "MYSQL_MAX_LIFETIME_SECONDS", "MYSQL_QUERY_TIMEOUT_SECS", "MYSQL_POLLER_REPLICAS",
			"CRAFT_APPS_META_REFRESH_SECS"}, cloudflare),
		"web": nil, "": nil,
	} {
		if got := config.Names(binary); !slices.Equal(got, want) {
			t.Errorf("Names(%q):\n got %q\nwant %q", binary, got, want)
		}
	}
}

// TestUsage: each binary's --help has a line for each of its variables, with
// a default and a description (the defaults below as docs/config.md gives
// them); another binary's, nothing.
func TestUsage(t *testing.T) {
	shared := map[string]string{"REDIS_URL": "(empty)", tokenVar: "(unset)",
		"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "120 with a token, 1800 without", "SHUTDOWN_TIMEOUT_SECS": "15"}
	for binary, want := range map[string]map[string]string{ // variable → the default its line shows
		"api": with(shared, "CRAFT_APPS_RELEASE_APPS", "the 13 Craft Apps", apiURLVar, "https://api.github.com/",
			"LOG_LEVEL", "info", "LOG_FORMAT", "json", "CRAFT_APPS_RELEASE_POLLING_ENABLED", "true", coordVar, "true",
			"CRAFT_APPS_RELEASE_MAX_BACKOFF_SECS", "14400", "CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS", "30", "CRAFT_APPS_RELEASE_TICK_SECS", "30",
			"CRAFT_APPS_RELEASE_REQUEST_SPACING_MS", "1000", "HTTP_ADDR", ":8080", "METRICS_ADDR", ":9090", "HTTP_MAX_CONNECTIONS", "1024",
			"CRAFT_APPS_HYDRATE_TIMEOUT_SECS", "10"),
		"poller": with(shared, "HTTP_ADDR", ":9090", "MYSQL_DSN", "(unset)", "MYSQL_URL", "(unset)", "MYSQL_MAX_CONNECTIONS", "4",
			"MYSQL_MAX_LIFETIME_SECS", "600", "MYSQL_MAX_LIFETIME_SECONDS", "(unset)", "MYSQL_QUERY_TIMEOUT_SECS", "5",
			"MYSQL_POLLER_REPLICAS", "3", "CRAFT_APPS_META_REFRESH_SECS", "60"),
		"web": nil,
	} {
		var buf bytes.Buffer
		config.Usage(&buf, binary)
		lines := usageLines(buf.String())
		for _, name := range config.Names(binary) {
			line, ok := lines[name]
			if !ok {
				t.Errorf("Usage(%q) has no line for %s:\n%s", binary, name, buf.String())
				continue
			}
			def, help, ok := strings.Cut(line, "  ")
			if !ok || strings.TrimSpace(def) == "" || strings.TrimSpace(help) == "" {
				t.Errorf("Usage(%q) line for %s = %q, want a default and a description", binary, name, line)
			}
			if want, ok := want[name]; ok && def != want {
				t.Errorf("Usage(%q) default of %s = %q, want %q", binary, name, def, want)
			}
		}
		if len(lines) != len(config.Names(binary)) || (binary == "web" && buf.Len() != 0) {
			t.Errorf("Usage(%q) lists %d variables, want %d:\n%s", binary, len(lines), len(config.Names(binary)), buf.String())
		}
	}
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
