// Package testkit holds the small helpers that tests share: a log buffer
// safe for concurrent writers (with its JSON lines by message), a free
// loopback address, waiting for a condition (failing the test, or not),
// reading and checking Prometheus samples, each app's answer as the full release_info
// answer holds it, the wire example of docs/wire.md, a memo that decodes
// the same answer once, and the updaters' own client code run from Node.js.
package testkit

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Buffer collects output written from several goroutines, such as a
// process's logs. Its zero value is ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines returns the JSON log lines written so far whose "msg" is msg, each
// decoded into its fields; lines that are not JSON are skipped.
func (b *Buffer) Lines(msg string) []map[string]any {
	var out []map[string]any
	for line := range strings.Lines(b.String()) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// Eventually polls cond until it holds, and fails the test when it still does
// not after 20 s. It bounds a wait; it measures nothing.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	const wait = 20 * time.Second
	if !Within(wait, cond) {
		t.Fatalf("timed out after %v waiting until %s", wait, what)
	}
}

// Within polls cond every 20 ms until it holds, and reports whether it did
// before d passed: for a caller that reports the failure its own way.
func Within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Scrape GETs the Prometheus text at url and returns every sample by its
// series (see Samples).
func Scrape(t testing.TB, url string) map[string]float64 {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET %s: %d %s, want 200 text/plain", url, res.StatusCode, res.Header.Get("Content-Type"))
	}
	return Samples(t, string(body))
}

// Samples returns every sample of a Prometheus text exposition by its series
// as the format prints it: name{label="value",...}. It fails the test on a
// line it cannot read.
func Samples(t testing.TB, text string) map[string]float64 {
	t.Helper()
	samples := make(map[string]float64)
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("unreadable sample %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("unreadable sample %q", line)
		}
		samples[line[:i]] = v
	}
	return samples
}

// Family returns the samples of got whose series starts with prefix.
func Family(got map[string]float64, prefix string) map[string]float64 {
	out := make(map[string]float64)
	for s, v := range got {
		if strings.HasPrefix(s, prefix) {
			out[s] = v
		}
	}
	return out
}

// WantSamples checks that got holds every series of want with its value,
// and no other series starting with any of prefixes.
func WantSamples(t testing.TB, got, want map[string]float64, prefixes ...string) {
	t.Helper()
	for _, p := range prefixes {
		for s, v := range Family(got, p) {
			if _, ok := want[s]; !ok {
				t.Errorf("unexpected series %s = %v", s, v)
			}
		}
	}
	for s, w := range want {
		if v, ok := got[s]; !ok {
			t.Errorf("%s: absent, want %v", s, w)
		} else if v != w {
			t.Errorf("%s: got %v, want %v", s, v, w)
		}
	}
}

// AppAnswers returns, for each app of a full release_info body, the answer
// GET /v1/craft_apps/release_info/{app} must give: {"success":true,"app":X}
// with X the app's object in body, byte for byte.
func AppAnswers(t testing.TB, body []byte) map[string][]byte {
	t.Helper()
	var top struct {
		ReleaseInfo struct {
			Apps map[string]json.RawMessage `json:"apps"`
		} `json:"release_info"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("release_info body %.200s: %v", body, err)
	}
	answers := make(map[string][]byte, len(top.ReleaseInfo.Apps))
	for key, obj := range top.ReleaseInfo.Apps {
		answers[key] = append(append([]byte(`{"success":true,"app":`), obj...), '}')
	}
	return answers
}
