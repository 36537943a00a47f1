package snapshot_test

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/test/fakeclock"
)

var update = flag.Bool("update", false, "rewrite testdata/without-channel.golden")

// golden is the file of the digests of every answer of realisticApps, as
// rendered before the pre-release channel existed.
const golden = "testdata/without-channel.golden"

// TestAnswersWithoutTheChannel: with no app on the pre-release channel,
// every answer (the full one, each app's, the page, each in both
// representations, with its ETag) is byte for byte what the service
// served before the channel existed: testdata holds their digests, written
// by that version.
func TestAnswersWithoutTheChannel(t *testing.T) {
	t.Parallel()
	apps, entries := realisticApps()
	s := snapshot.New(apps, fakeclock.New(t0.Add(24*time.Hour)))
	var lines []string
	add := func(state string, r *snapshot.Rendering) {
		doc := func(name string, d snapshot.Doc) {
			lines = append(lines, fmt.Sprintf("%s %s body %x gzip %x etags %s %s %s", state, name,
				sha256.Sum256(d.Body()), sha256.Sum256(d.Gzip()), d.ETag, d.GzipETag, d.CacheControl))
		}
		doc("full", r.Doc)
		doc("page", r.Page)
		for _, a := range apps {
			doc(a.Key, r.Apps[a.Key].Doc)
		}
	}
	add("cold", s.Current())
	half := 0
	for k, e := range entries {
		if half++; half > len(entries)/2 {
			break
		}
		s.Set(k, e)
	}
	s.SetAll(entries, time.Now())
	add("warm", s.Current())
	got := strings.Join(lines, "\n") + "\n"
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the answers differ from %s:\n got %s\nwant %s", golden, got, want)
	}
}
