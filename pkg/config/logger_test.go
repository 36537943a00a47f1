package config_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/config"
)

func TestLogger(t *testing.T) {
	tests := []struct {
		name      string
		vars      map[string]string
		wantJSON  bool
		wantDebug bool
	}{
		{"defaults: json at info", nil, true, false},
		{"json at debug", map[string]string{"LOG_LEVEL": "debug"}, true, true},
		{"console at info", map[string]string{"LOG_FORMAT": "console"}, false, false},
		{"console at debug", map[string]string{"LOG_FORMAT": "console", "LOG_LEVEL": "debug"}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, _, err := config.LoadAPI(lookup(tc.vars))
			if err != nil {
				t.Fatalf("LoadAPI(%q): %v", tc.vars, err)
			}
			var buf bytes.Buffer
			log := a.Logger(&buf)
			log.Debug("debug line")
			log.Info("info line")
			if err := log.Sync(); err != nil {
				t.Fatalf("sync: %v", err)
			}
			out := buf.String()
			if got := strings.Contains(out, "debug line"); got != tc.wantDebug {
				t.Errorf("debug line written = %v, want %v:\n%s", got, tc.wantDebug, out)
			}
			if !strings.Contains(out, "info line") {
				t.Errorf("info line missing:\n%s", out)
			}
			for line := range strings.Lines(out) {
				if got := json.Valid([]byte(line)); got != tc.wantJSON {
					t.Errorf("line %q is JSON = %v, want %v", line, got, tc.wantJSON)
				}
			}
		})
	}
	t.Run("error level hides warnings", func(t *testing.T) {
		a, _, err := config.LoadAPI(lookup(map[string]string{"LOG_LEVEL": "error"}))
		if err != nil {
			t.Fatalf("LoadAPI: %v", err)
		}
		var buf bytes.Buffer
		log := a.Logger(&buf)
		log.Warn("warn line")
		log.Error("error line")
		if out := buf.String(); strings.Contains(out, "warn line") || !strings.Contains(out, "error line") {
			t.Errorf("at error level got:\n%s\nwant the error line only", out)
		}
	})
}

func TestLogStart(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	config.LogStart(zap.New(core), []string{"TICK=0 is below the minimum 1: using 1"}, zap.String("version", "v1"))
	got := logs.All()
	if len(got) != 2 || got[0].Message != "setting raised to its minimum" || got[0].Level != zapcore.WarnLevel ||
		got[1].Message != "starting" || got[1].ContextMap()["version"] != "v1" {
		t.Errorf("lines %+v, want the warning then the settings", got)
	}
}
