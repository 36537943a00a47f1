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
	for url, pieces := range map[string][]string{ // URL → the pieces no error may quote
		"redis://:p4ss@w0rd/s3cret@redis.example:6379": {"p4ss", "w0rd", "s3cret"},
		"redis://user:12345/67890@redis.example:6379":  {"12345", "67890"},
		"redis://user:abc/defgh@redis.example:6379/0":  {"defgh"},
		"redis://:s3cr3t?xyzzy@redis.example:6379":     {"s3cr3t", "xyzzy"},
		"redis://:s3cr3t#xyzzy@redis.example:6379":     {"s3cr3t", "xyzzy"},
		"redis://:pa%zzword@redis.example:6379":        {"pa%zzword", "zzword"},
		"redis://:hunter2pw@redis.example:6379/zero":   {"hunter2pw", "zero"},
		"redis://:hunter2pw@redis.example:63x79":       {"hunter2pw", "63x79"},
	} {
		_, _, err := config.LoadAPI(lookup(env("REDIS_URL", url)))
		if err == nil || !strings.HasPrefix(err.Error(), "REDIS_URL: not a valid URL (want redis://") {
			t.Errorf("REDIS_URL %q: error %v, want the fixed message", url, err)
			continue
		}
		for _, p := range pieces {
			if strings.Contains(strings.TrimPrefix(err.Error(), "REDIS_URL: "), p) {
				t.Errorf("error %q quotes %q", err, p)
			}
		}
	}
	for _, good := range []string{"redis://:p%40ss%2Fw0rd@redis.example:6379/1", "rediss://u:p@ss@redis.example:6380"} {
		if _, _, err := config.LoadAPI(lookup(env("REDIS_URL", good))); err != nil {
			t.Errorf("LoadAPI(REDIS_URL %q): %v, want it accepted", good, err)
		}
	}
}
