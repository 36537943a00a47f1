package config_test

import (
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
