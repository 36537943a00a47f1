package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/test/redistest"
)

func TestBackoffCommand(t *testing.T) {
	rs := redistest.Start(t)
	client, err := redis.OpenURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	shared := store.New(client, "poller-7d9f-x", config.DefaultApps())
	vars := map[string]string{"REDIS_URL": rs.URL(), "USER": "alice"}
	getenv := func(k string) string { return vars[k] }
	ctx := context.Background()
	backoff := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		err := Run(ctx, append([]string{"backoff"}, args...), getenv, &out, &errOut, nil)
		return out.String(), errOut.String(), err
	}

	if out, _, err := backoff(); err != nil || out != "fleet backoff: none\n" {
		t.Errorf("no backoff: got %q, %v", out, err)
	}
	if out, logs, err := backoff("clear"); err != nil || out != "fleet backoff: none, nothing to clear\n" || logs != "" {
		t.Errorf("clear with none: got %q, logs %q, %v", out, logs, err)
	}

	until := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	if err := shared.PutBackoff(ctx, schedule.Backoff{Until: until, Trouble: 2}); err != nil {
		t.Fatal(err)
	}
	out, _, err := backoff()
	if err != nil || !strings.HasPrefix(out, "fleet backoff: ACTIVE for ") || !strings.Contains(out, "2 bad rounds in a row, set by poller-7d9f-x") {
		t.Errorf("an active backoff: got %q, %v", out, err)
	}

	out, logs, err := backoff("clear")
	if err != nil || !strings.HasPrefix(out, "fleet backoff cleared by alice@") {
		t.Errorf("clear: got %q, %v", out, err)
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(logs), &line); err != nil {
		t.Fatalf("clear logged %q, want one JSON line: %v", logs, err)
	}
	if line["msg"] != "fleet backoff cleared" || line["level"] != "warn" || line["user"] != "alice" || line["host"] == "" ||
		line["set_by"] != "poller-7d9f-x" || line["trouble"] != float64(2) || line["until"] == nil {
		t.Errorf("clear logged %v, want who cleared what", line)
	}
	_, b, err := shared.Status(ctx, nil)
	if err != nil || b.Exists {
		t.Errorf("after clear: backoff hash exists %v (%v), want it gone", b.Exists, err)
	}
	if out, _, err := backoff(); err != nil || out != "fleet backoff: none\n" {
		t.Errorf("after clear: got %q, %v", out, err)
	}

	// --by names the person behind a kubectl exec.
	if err := shared.PutBackoff(ctx, schedule.Backoff{Until: until, Trouble: 1}); err != nil {
		t.Fatal(err)
	}
	out, logs, err = backoff("clear", "--by", "bob")
	if err != nil || !strings.HasPrefix(out, "fleet backoff cleared by bob@") || !strings.Contains(logs, `"user":"bob"`) {
		t.Errorf("clear --by bob: got %q, logs %q, %v", out, logs, err)
	}

	// set_by comes from Redis: logged escaped, never raw.
	intruder := store.New(client, "EVIL\u202eDENWO\u009b2J", config.DefaultApps())
	if err := intruder.PutBackoff(ctx, schedule.Backoff{Until: until, Trouble: 1}); err != nil {
		t.Fatal(err)
	}
	if _, logs, err = backoff("clear"); err != nil || !strings.Contains(logs, `"set_by":"\"EVIL\\u202eDENWO\\u009b2J\""`) {
		t.Errorf("clear a backoff set by a hostile name: logs %q, %v; want set_by escaped", logs, err)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"clear", "now"}, `got "clear now", want no argument, clear, or clear --by NAME`},
		{[]string{"reset"}, `got "reset"`},
		{nil, "REDIS_URL is empty"}, // with REDIS_URL unset, below
	} {
		if tt.args == nil {
			vars["REDIS_URL"], vars["CRAFT_APPS_RELEASE_COORDINATION_ENABLED"] = "", "false"
		}
		if _, _, err := backoff(tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("backoff %q: got %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}

func TestBackoffLine(t *testing.T) {
	now := time.Date(2026, 11, 29, 18, 20, 48, 0, time.UTC)
	tests := []struct {
		name string
		b    store.BackoffStatus
		want string
	}{
		{"none", store.BackoffStatus{}, "fleet backoff: none"},
		{"active", store.BackoffStatus{Exists: true, By: "p-1", Backoff: schedule.Backoff{Until: now.Add(41*time.Minute + 12*time.Second), Trouble: 1}},
			"fleet backoff: ACTIVE for 41m12s more (until 2026-11-29T19:02:00Z), 1 bad rounds in a row, set by p-1"},
		{"expired", store.BackoffStatus{Exists: true, Backoff: schedule.Backoff{Until: now.Add(-time.Minute), Trouble: 3}},
			"fleet backoff: expired 1m0s ago, 3 bad rounds in a row, set by -"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := backoffLine(tt.b, now); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
