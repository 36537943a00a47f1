package admin

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/redistest"
)

// TestStatusQuotesWhatCameFromOutside: an ETag and a writer's name holding
// terminal escapes, a bidirectional override, tabs and newlines show as
// escapes, so they reach the terminal as text; a stored release whose tag
// holds them is unreadable and shows no tag at all.
func TestStatusQuotesWhatCameFromOutside(t *testing.T) {
	rs := redistest.Start(t)
	now := time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)
	ms := strconv.FormatInt(now.Add(-time.Minute).UnixMilli(), 10)
	hostile := "v1\x1b]0;pwned\x07\x1b[2J\r\n\x00\t\u202e"
	v1, err := release.Marshal(&release.Release{Tag: "v1.0.0", Version: "1.0.0", Name: "v1.0.0",
		HTMLURL: release.TagURL("storytold/photocraft", "v1.0.0"), Assets: []release.Asset{}})
	if err != nil {
		t.Fatal(err)
	}
	rs.MustDo("HSET", store.AppKey("photocraft"), "v", "1", "fetched_ms", ms,
		"etag", `"e`+hostile+`"`, "by", "pod"+hostile, "release", string(v1))
	rs.MustDo("HSET", store.AppKey("vectorcraft"), "v", "1", "fetched_ms", ms, "etag", `"e"`, "by", "pod",
		"release", `{"tag":"v1\u001b]0;pwned\u0007\u001b[2J\r\n\u0000\t\u202e","assets":[]}`)
	rs.MustDo("HSET", store.BackoffKey, "v", "1", "until_ms", strconv.FormatInt(now.Add(time.Hour).UnixMilli(), 10),
		"trouble", "1", "by", "pod"+hostile)
	vars := map[string]string{
		"REDIS_URL":               rs.URL(),
		"CRAFT_APPS_RELEASE_APPS": "photocraft=PhotoCraft=storytold/photocraft,vectorcraft=VectorCraft=storytold/vectorcraft",
	}
	var out bytes.Buffer
	if err := Run(context.Background(), []string{"status"}, func(k string) string { return vars[k] }, &out, io.Discard, fakeclock.New(now)); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	if i := strings.IndexFunc(table, func(r rune) bool { return (r < ' ' && r != '\n') || r == 0x7f || r >= 0x80 }); i >= 0 {
		t.Errorf("status printed the raw character %q at %d:\n%q", table[i], i, table)
	}
	if got := strings.Count(table, "\n"); got != 5 {
		t.Errorf("status printed %d lines, want 5 (header, two apps, blank, backoff):\n%s", got, table)
	}
	for _, want := range []string{`"\"ev1\x1b]0;pwned\a\x1b[2J\r\n\x00\t\u202e\""`, `"podv1\x1b]0;pwned`, "v1.0.0"} {
		if !strings.Contains(table, want) {
			t.Errorf("status output lacks %s:\n%s", want, table)
		}
	}
}

func TestShown(t *testing.T) {
	tests := []struct{ in, want string }{
		{"v1.2.3", "v1.2.3"},
		{`W/"abc"`, `W/"abc"`},
		{"", ""},
		{"v1\x1b]0;pwned\x07", `"v1\x1b]0;pwned\a"`},
		{"a b", `"a b"`},
		{"a\tb\r\n", `"a\tb\r\n"`},
		{"версия\u202e", `"\u0432\u0435\u0440\u0441\u0438\u044f\u202e"`},
		{"\x7f", `"\x7f"`},
	}
	for _, tt := range tests {
		if got := shown(tt.in); got != tt.want {
			t.Errorf("shown(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
