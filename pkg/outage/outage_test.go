package outage_test

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/outage"
)

func TestTracker(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core)
	var o outage.Tracker
	err := errors.New("i/o timeout")

	o.Up(log, at(0), "back") // no outage: nothing to say
	o.Down(log, at(0), at(5*time.Second), "down", zap.Error(err))
	o.Down(log, at(30*time.Second), at(35*time.Second), "down")
	o.Down(log, at(10*time.Minute), at(10*time.Minute+5*time.Second), "down")
	o.Up(log, at(11*time.Minute), "back")
	o.Down(log, at(12*time.Minute), at(12*time.Minute), "down")

	type line struct {
		msg  string
		away time.Duration
	}
	want := []line{
		{"down", 5 * time.Second},                // counted from the failing call's start
		{"down", 10*time.Minute + 5*time.Second}, // 10 minutes after the first warning
		{"back", 11 * time.Minute},               //
		{"down", 0},                              // a new outage warns at once
	}
	var got []line
	for _, e := range logs.All() {
		got = append(got, line{e.Message, e.ContextMap()["away"].(time.Duration)})
	}
	if len(got) != len(want) {
		t.Fatalf("lines %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %v, want %v", i, got[i], want[i])
		}
	}
}
