package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestRedisClockStepsBack runs a poller and two pods against a redis-server
// whose clock is an hour fast and is then set right, as NTP stepping the
// Redis host does (docs/redis.md, "Time you cannot trust"). While it is
// fast, no time served is after the answer's Date; once it is right, the
// poller keeps asking GitHub without a pause of the step's size, and a
// release published at the step reaches both pods at the next poll, not an
// hour later.
func TestRedisClockStepsBack(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	want := publishFirst(gh)
	shift := redistest.NewShift(t, time.Hour)
	rs := shift.Start(t)
	d := deployment{gh: gh, url: rs.URL(), apps: testAppsEnv}
	d.pollers(t, 1)
	pods := d.pods(t, 2)
	waitTags(t, want, pods...)
	for _, p := range pods {
		a := p.get(t)
		date, err := http.ParseTime(a.header.Get("Date"))
		if err != nil {
			t.Fatalf("%s: Date %q: %v", p.name, a.header.Get("Date"), err)
		}
		// Date has whole seconds.
		for app, at := range fetched(testkit.Decode(t, a.body)) {
			if at.Truncate(time.Second).After(date) {
				t.Errorf("%s: %s's app_last_fetched %v is after the answer's Date %v", p.name, app, at, date)
			}
		}
	}

	shift.Set(0)
	stepped := time.Now()
	gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.1.0"))
	want["photocraft"] = "v1.1.0"
	took := waitTags(t, want, pods...)
	var first, longest time.Duration
	last := stepped
	for _, r := range gh.Requests() {
		if r.Repo != photocraft || r.At.Before(stepped) {
			continue
		}
		if first == 0 {
			first = r.At.Sub(stepped)
		}
		longest, last = max(longest, r.At.Sub(last)), r.At
	}
	t.Logf("after Redis's clock stepped back an hour: first GitHub request after %v, longest gap %v; the release published then served by both pods after %v",
		first.Round(time.Millisecond), longest.Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	if first == 0 || longest > 5*time.Second {
		t.Errorf("after the step the poller's first request came after %v and its longest gap was %v, want a request every second or so", first, longest)
	}
}
