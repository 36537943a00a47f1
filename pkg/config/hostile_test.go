package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/config"
)

// TestRedisURLQuotesNothing: a REDIS_URL whose password holds an @, / ? or #
// that was not percent-encoded is refused with a fixed message quoting no
// piece of it, before anything could dial (and look up) a piece of the
// password as a host.
func TestRedisURLQuotesNothing(t *testing.T) {
	tests := []struct {
		url    string
		pieces []string
	}{
		{"redis://:p4ss@w0rd/s3cret@redis.example:6379", []string{"p4ss", "w0rd", "s3cret"}},
		{"redis://user:12345/67890@redis.example:6379", []string{"12345", "67890"}},
		{"redis://user:abc/defgh@redis.example:6379/0", []string{"defgh"}},
		{"redis://:s3cr3t?xyzzy@redis.example:6379", []string{"s3cr3t", "xyzzy"}},
		{"redis://:s3cr3t#xyzzy@redis.example:6379", []string{"s3cr3t", "xyzzy"}},
		{"redis://:pa%zzword@redis.example:6379", []string{"pa%zzword", "zzword"}},
		{"redis://:hunter2pw@redis.example:6379/zero", []string{"hunter2pw", "zero"}},
		{"redis://:hunter2pw@redis.example:63x79", []string{"hunter2pw", "63x79"}},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			_, _, err := config.LoadAPI(lookup(map[string]string{"REDIS_URL": tt.url}))
			if err == nil {
				t.Fatal("no error, want the URL refused")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "REDIS_URL: not a valid URL (want redis://") {
				t.Errorf("error %q, want the fixed message", msg)
			}
			for _, p := range tt.pieces {
				if strings.Contains(strings.TrimPrefix(msg, "REDIS_URL: "), p) {
					t.Errorf("error %q quotes %q", msg, p)
				}
			}
		})
	}
	for _, good := range []string{"redis://:p%40ss%2Fw0rd@redis.example:6379/1", "rediss://u:p@ss@redis.example:6380"} {
		if _, _, err := config.LoadAPI(lookup(map[string]string{"REDIS_URL": good})); err != nil {
			t.Errorf("LoadAPI(REDIS_URL %q): %v, want it accepted", good, err)
		}
	}
}

// TestTokenOverCleartextRefused: a token with an http:// API URL is refused
// unless the host is loopback (finding 6).
func TestTokenOverCleartextRefused(t *testing.T) {
	tests := []struct {
		url, token string
		ok         bool
	}{
		{"http://ghe.example.com/api/v3/", "tok3n", false},
		{"http://192.168.1.10:8080/", "tok3n", false},
		{"http://ghe.example.com/api/v3/", "", true},
		{"https://ghe.example.com/api/v3/", "tok3n", true},
		{"http://127.0.0.1:8080/", "tok3n", true},
		{"http://localhost:8080/", "tok3n", true},
		{"http://[::1]:8080/", "tok3n", true},
	}
	for _, tt := range tests {
		t.Run(tt.url+" "+tt.token, func(t *testing.T) {
			vars := map[string]string{"CRAFT_APPS_RELEASE_GITHUB_API_URL": tt.url, "CRAFT_APPS_RELEASE_GITHUB_TOKEN": tt.token}
			_, _, err := config.LoadAPI(lookup(vars))
			if got := err == nil; got != tt.ok {
				t.Fatalf("LoadAPI: %v, want ok %v", err, tt.ok)
			}
			if err != nil && (!strings.Contains(err.Error(), "CRAFT_APPS_RELEASE_GITHUB_TOKEN: ") || strings.Contains(err.Error(), tt.token)) {
				t.Errorf("error %q, want one naming the token's variable and not holding it", err)
			}
		})
	}
}

// TestMetricsAddrAndConnectionCap: METRICS_ADDR is its own port, and
// HTTP_MAX_CONNECTIONS is at least 1 (findings 3 and 4).
func TestMetricsAddrAndConnectionCap(t *testing.T) {
	bad := []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{"METRICS_ADDR": ":8080"}, `METRICS_ADDR: ":8080" has the port of HTTP_ADDR`},
		{map[string]string{"HTTP_ADDR": "127.0.0.1:7000", "METRICS_ADDR": "0.0.0.0:7000"}, "METRICS_ADDR: "},
		{map[string]string{"METRICS_ADDR": "9090"}, `METRICS_ADDR: "9090" is not host:port`},
		{map[string]string{"HTTP_MAX_CONNECTIONS": "many"}, `HTTP_MAX_CONNECTIONS: "many" is not a whole number`},
	}
	for _, tt := range bad {
		if _, _, err := config.LoadAPI(lookup(tt.vars)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("LoadAPI(%v): %v, want an error containing %q", tt.vars, err, tt.want)
		}
	}
	a, warnings, err := config.LoadAPI(lookup(map[string]string{"HTTP_ADDR": "127.0.0.1:0", "METRICS_ADDR": "127.0.0.1:0", "HTTP_MAX_CONNECTIONS": "0"}))
	if err != nil {
		t.Fatal(err)
	}
	if a.MaxConnections != 1 || !slices.Contains(warnings, "HTTP_MAX_CONNECTIONS=0 is below the minimum 1: using 1") {
		t.Errorf("MaxConnections %d, warnings %q; want 1 with a warning", a.MaxConnections, warnings)
	}
}
