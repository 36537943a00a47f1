package config_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/config"
)

// TestLogger: the logger writes the lines at LOG_LEVEL and above, as JSON
// or for the console.
func TestLogger(t *testing.T) {
	for _, tc := range []struct {
		level  zapcore.Level
		format string
		want   []string // the lines written, of debug, info, warn and error
	}{
		{zapcore.InfoLevel, config.FormatJSON, []string{"info", "warn", "error"}},
		{zapcore.DebugLevel, config.FormatJSON, []string{"debug", "info", "warn", "error"}},
		{zapcore.InfoLevel, config.FormatConsole, []string{"info", "warn", "error"}},
		{zapcore.DebugLevel, config.FormatConsole, []string{"debug", "info", "warn", "error"}},
		{zapcore.ErrorLevel, config.FormatJSON, []string{"error"}},
	} {
		var buf bytes.Buffer
		log := config.Shared{LogLevel: tc.level, LogFormat: tc.format}.Logger(&buf)
		log.Debug("debug line")
		log.Info("info line")
		log.Warn("warn line")
		log.Error("error line")
		if err := log.Sync(); err != nil {
			t.Fatalf("sync: %v", err)
		}
		var got []string
		for line := range strings.Lines(buf.String()) {
			if json.Valid([]byte(line)) != (tc.format == config.FormatJSON) {
				t.Errorf("%s at %v: line %q, want %s", tc.format, tc.level, line, tc.format)
			}
			for _, level := range []string{"debug", "info", "warn", "error"} {
				if strings.Contains(line, level+" line") {
					got = append(got, level)
				}
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s at %v wrote the lines %q, want %q", tc.format, tc.level, got, tc.want)
		}
	}
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
