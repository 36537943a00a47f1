package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"maps"
	"slices"
	"testing"

	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

const (
	photocraft  = "storytold/photocraft"
	vectorcraft = "storytold/vectorcraft"
)

// publishFirst publishes the releases the tests start from; filmcraft's
// repository has none, so the fake answers 404 for it.
func publishFirst(gh *fakegithub.Server) map[string]string {
	gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.0.0"))
	gh.Publish(vectorcraft, fakegithub.NewRelease(vectorcraft, "v2.0.0"))
	return map[string]string{"filmcraft": "", "photocraft": "v1.0.0", "vectorcraft": "v2.0.0"}
}

func TestReleaseReachesEveryPod(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	want := publishFirst(gh)
	rs := redistest.Start(t)
	d := deployment{gh: gh, url: rs.URL(), apps: testAppsEnv}
	pollers, pods := d.pollers(t, 2), d.pods(t, 2)
	waitTags(t, want, pods...)

	gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.1.0"))
	want["photocraft"] = "v1.1.0"
	t.Logf("published on the fake GitHub → served by both pods after %v", waitTags(t, want, pods...))

	// With the pollers stopped Redis holds still, and both pods must end up
	// serving exactly what it holds, in the same bytes.
	for _, p := range pollers {
		p.stop(t)
	}
	entries, _, err := newStore(t, rs.URL(), nil).Load(context.Background(), slices.Collect(maps.Keys(want)))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		testkit.Eventually(t, p.name+" serves what Redis holds", func() bool {
			got := fetched(p.served(t))
			for app, e := range entries {
				if !e.FetchedAt.Equal(got[app]) {
					return false
				}
			}
			return true
		})
	}
	for _, enc := range []string{"identity", "gzip"} {
		t.Run(enc, func(t *testing.T) {
			a, b := pods[0].get(t, "Accept-Encoding", enc), pods[1].get(t, "Accept-Encoding", enc)
			if !bytes.Equal(a.body, b.body) {
				t.Errorf("bodies differ:\n%s: %s\n%s: %s", pods[0].name, summary(a.body), pods[1].name, summary(b.body))
			}
			for _, h := range []string{"ETag", "Cache-Control", "Content-Type", "Content-Encoding", "Vary", "Content-Length"} {
				if a.header.Get(h) != b.header.Get(h) {
					t.Errorf("%s got %q on %s and %q on %s, want the same", h, a.header.Get(h), pods[0].name, b.header.Get(h), pods[1].name)
				}
			}
		})
	}
}

func gunzip(t testing.TB, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	var out []byte
	if err == nil {
		out, err = io.ReadAll(zr)
	}
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	return out
}
