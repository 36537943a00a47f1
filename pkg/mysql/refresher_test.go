package mysql_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/mysql"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/testkit"
)

// fakeReader answers Live with what the test set.
type fakeReader struct {
	mu      sync.Mutex
	m       release.Bulletin
	skipped []string
	err     error
	reads   []time.Time
}

func (r *fakeReader) Live(_ context.Context, now time.Time) (release.Bulletin, []string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads = append(r.reads, now)
	return r.m, r.skipped, r.err
}

func (r *fakeReader) set(m release.Bulletin, skipped []string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m, r.skipped, r.err = m, skipped, err
}

func (r *fakeReader) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.reads) }

// fakePublisher records when it is given a read and answers as the test
// set. Only the loop under test calls it.
type fakePublisher struct {
	refused bool
	err     error
	puts    []time.Time
}

func (p *fakePublisher) PutMeta(_ context.Context, _ release.Bulletin, at time.Time) (bool, error) {
	if p.err != nil {
		return false, p.err
	}
	p.puts = append(p.puts, at)
	return !p.refused, nil
}

func newRefresher(t testing.TB, opts ...mysql.RefresherOption) (*mysql.Refresher, *fakeReader, *fakePublisher, *fakeclock.Clock, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	r, p, c := &fakeReader{}, &fakePublisher{}, fakeclock.New(noon)
	f, err := mysql.NewRefresher(r, p, time.Minute, zap.New(core), c, opts...)
	must(t, err)
	return f, r, p, c, logs
}

func oneAlert(title string) release.Bulletin {
	return release.Bulletin{Notices: release.Notices{Alerts: []release.Alert{{Title: title}}}}
}

func TestRefreshPublishes(t *testing.T) {
	f, r, p, c, logs := newRefresher(t)
	ctx := context.Background()
	steps := []struct {
		name      string
		at        time.Time
		m         release.Bulletin
		refused   bool
		wantLevel zapcore.Level // of the "meta refreshed" line
	}{
		{"the first read", noon, oneAlert("a"), false, zapcore.InfoLevel},
		{"the same lists a minute later", noon.Add(time.Minute), oneAlert("a"), false, zapcore.DebugLevel},
		{"a change", noon.Add(2 * time.Minute), oneAlert("b"), false, zapcore.InfoLevel},
		{"a change another poller published first", noon.Add(3 * time.Minute), oneAlert("c"), true, zapcore.DebugLevel},
	}
	for i, st := range steps {
		c.Set(st.at)
		r.set(st.m, nil, nil)
		p.refused = st.refused
		if err := f.Refresh(ctx); err != nil {
			t.Fatalf("%s: Refresh: %v", st.name, err)
		}
		if got := p.puts; len(got) != i+1 || !got[i].Equal(st.at) {
			t.Errorf("%s: published at %v, want the read's time %v last", st.name, got, st.at)
		}
		lines := logs.FilterMessage("meta refreshed").All()
		logs.TakeAll()
		if len(lines) != 1 || lines[0].Level != st.wantLevel || lines[0].ContextMap()["written"] != !st.refused {
			t.Errorf("%s: log %+v, want one line at %v with written=%v", st.name, lines, st.wantLevel, !st.refused)
		}
	}
}

func TestRefreshOutages(t *testing.T) {
	down := errors.New("dial tcp 127.0.0.1:3306: connection refused")
	type step struct {
		after              time.Duration // since noon
		mysqlErr, redisErr error
		wantWarn           string // the message of the one warning logged, if any
		wantInfo           string // the message of the one recovery line logged, if any
		wantAway           time.Duration
		published          bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"mysql down for twelve minutes", []step{
			{after: 0, published: true},
			{after: time.Minute, mysqlErr: down, wantWarn: "mysql read failed, serving the last published meta"},
			{after: 2 * time.Minute, mysqlErr: down},
			{after: 10*time.Minute + 59*time.Second, mysqlErr: down},
			{after: 11 * time.Minute, mysqlErr: down, wantWarn: "mysql read failed, serving the last published meta", wantAway: 10 * time.Minute},
			{after: 12 * time.Minute, mysqlErr: down},
			{after: 13 * time.Minute, wantInfo: "mysql is back", wantAway: 12 * time.Minute, published: true},
			{after: 14 * time.Minute, mysqlErr: down, wantWarn: "mysql read failed, serving the last published meta"},
		}},
		{"redis down", []step{
			{after: 0, redisErr: down, wantWarn: "redis write failed, meta not published"},
			{after: time.Minute, redisErr: down},
			{after: 2 * time.Minute, wantInfo: "redis is back for the meta", wantAway: 2 * time.Minute, published: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, r, p, c, logs := newRefresher(t)
			for _, st := range tt.steps {
				at := noon.Add(st.after)
				c.Set(at)
				r.set(oneAlert("x"), nil, st.mysqlErr)
				p.err = st.redisErr
				before := len(p.puts)
				err := f.Refresh(context.Background())
				if want := errors.Join(st.mysqlErr, st.redisErr); (err == nil) != (want == nil) {
					t.Errorf("at +%v: Refresh = %v, want an error: %v", st.after, err, want != nil)
				}
				if got := len(p.puts) > before; got != st.published {
					t.Errorf("at +%v: published %v, want %v", st.after, got, st.published)
				}
				warns := logs.FilterLevelExact(zapcore.WarnLevel).All()
				infos := logs.FilterLevelExact(zapcore.InfoLevel).FilterFieldKey("away").All()
				logs.TakeAll()
				checkLine(t, st.after, "warning", warns, st.wantWarn, st.wantAway)
				checkLine(t, st.after, "recovery", infos, st.wantInfo, st.wantAway)
			}
		})
	}
}

// checkLine checks that lines is one line with message msg and the away
// field, or nothing when msg is "".
func checkLine(t testing.TB, after time.Duration, what string, lines []observer.LoggedEntry, msg string, away time.Duration) {
	t.Helper()
	if msg == "" {
		if len(lines) != 0 {
			t.Errorf("at +%v: %s lines %v, want none", after, what, lines)
		}
		return
	}
	if len(lines) != 1 || lines[0].Message != msg || lines[0].ContextMap()["away"] != away {
		t.Errorf("at +%v: %s lines %+v, want one %q with away=%v", after, what, lines, msg, away)
	}
}

func TestRefreshSkippedRows(t *testing.T) {
	f, r, p, c, logs := newRefresher(t)
	for _, st := range []struct {
		after    time.Duration
		skipped  []string
		wantWarn bool
	}{
		{0, []string{"alert/3"}, true},
		{time.Minute, []string{"alert/3"}, false},
		{10 * time.Minute, []string{"alert/3", "app/1"}, true},
		{11 * time.Minute, nil, false},
	} {
		c.Set(noon.Add(st.after))
		r.set(oneAlert("good"), st.skipped, nil)
		must(t, f.Refresh(context.Background()))
		warns := logs.FilterLevelExact(zapcore.WarnLevel).All()
		logs.TakeAll()
		if st.wantWarn && (len(warns) != 1 || fmt.Sprintf("%q", warns[0].ContextMap()["ids"]) != fmt.Sprintf("%q", st.skipped)) {
			t.Errorf("at +%v: warnings %+v, want one listing %q", st.after, warns, st.skipped)
		}
		if !st.wantWarn && len(warns) != 0 {
			t.Errorf("at +%v: warnings %+v, want none", st.after, warns)
		}
	}
	if got := len(p.puts); got != 4 {
		t.Errorf("published %d times, want 4: bad rows never stop the good ones", got)
	}
}

// slowReader is a fakeReader whose reads take took on the clock.
type slowReader struct {
	fakeReader
	clock *fakeclock.Clock
	took  time.Duration
}

func (r *slowReader) Live(ctx context.Context, now time.Time) (release.Bulletin, []string, error) {
	r.clock.Advance(r.took)
	return r.fakeReader.Live(ctx, now)
}

// runLoop runs a Refresher's loop on a fake clock at noon, over a reader
// whose reads take took; done gets what Run returns once cancel is called.
func runLoop(t testing.TB, took time.Duration) (f *mysql.Refresher, r *slowReader, c *fakeclock.Clock, done chan error, cancel func()) {
	t.Helper()
	c = fakeclock.New(noon)
	r = &slowReader{clock: c, took: took}
	f, err := mysql.NewRefresher(r, &fakePublisher{}, time.Minute, nil, c)
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	return f, r, c, done, cancel
}

// TestRunKeepsTheInterval runs the loop on the fake clock: a read at once,
// then one every interval after the first (a read that takes longer than the
// interval skips the times it missed), and none before its time.
func TestRunKeepsTheInterval(t *testing.T) {
	tests := []struct {
		name string
		took time.Duration // how long each read takes
		want []time.Duration
	}{
		{"quick reads", 0, []time.Duration{0, time.Minute, 2 * time.Minute, 3 * time.Minute}},
		{"reads of 10 s", 10 * time.Second, []time.Duration{0, time.Minute, 2 * time.Minute, 3 * time.Minute}},
		{"reads longer than the interval", 90 * time.Second, []time.Duration{0, 2 * time.Minute, 4 * time.Minute, 6 * time.Minute}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, r, c, done, cancel := runLoop(t, tc.took)
			for i := range tc.want {
				parked(t, c)
				if got := r.count(); got != i+1 {
					t.Fatalf("reads = %d before the wait %d, want %d", got, i+1, i+1)
				}
				next, _ := c.Next()
				if i+1 < len(tc.want) {
					if want := noon.Add(tc.want[i+1]); !next.Equal(want) {
						t.Fatalf("wait %d ends at %s, want %s", i+1, next.Format(time.TimeOnly), want.Format(time.TimeOnly))
					}
				}
				// A nanosecond early nothing happens; at the time, the next read.
				c.Set(next.Add(-time.Nanosecond))
				if c.Waiters() != 1 || r.count() != i+1 {
					t.Fatalf("the loop moved before its time: waiters %d, reads %d", c.Waiters(), r.count())
				}
				if i+1 < len(tc.want) {
					c.Set(next)
				}
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run = %v, want nil on cancellation", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Run did not return after cancellation")
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			for i, at := range r.reads {
				if want := noon.Add(tc.want[i]); !at.Equal(want) {
					t.Errorf("read %d at %s, want %s", i, at.Format(time.TimeOnly), want.Format(time.TimeOnly))
				}
			}
		})
	}
}

// TestWake: a Wake brings a read before the interval, a second after the
// last read at the soonest, and wakes that arrive meanwhile are one.
func TestWake(t *testing.T) {
	f, r, c, _, cancel := runLoop(t, 0)
	defer cancel()
	parked(t, c)
	c.Set(noon.Add(300 * time.Millisecond))
	for range 3 {
		f.Wake()
	}
	testkit.Eventually(t, "the woken loop waits out the spacing", func() bool {
		next, ok := c.Next()
		return ok && next.Equal(noon.Add(mysql.WakeSpacing))
	})
	c.Set(noon.Add(mysql.WakeSpacing))
	testkit.Eventually(t, "the woken read", func() bool { return r.count() == 2 })
	parked(t, c)
	if next, _ := c.Next(); !next.Equal(noon.Add(time.Minute)) {
		t.Errorf("after the woken read the loop waits until %s, want the interval's %s", next.Format(time.TimeOnly), noon.Add(time.Minute).Format(time.TimeOnly))
	}
	if got := r.count(); got != 2 {
		t.Errorf("reads = %d, want 2: three wakes are one", got)
	}
}

// parked waits until the loop waits on c, without sleeping.
func parked(t testing.TB, c *fakeclock.Clock) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for c.Waiters() == 0 {
		select {
		case <-c.Parked():
		case <-timeout:
			t.Fatal("the loop never waited on the clock")
		}
	}
}

func TestNewRefresherRefuses(t *testing.T) {
	tests := []struct {
		name     string
		r        mysql.Reader
		p        mysql.Publisher
		interval time.Duration
	}{
		{"no reader", nil, &fakePublisher{}, time.Minute},
		{"no publisher", &fakeReader{}, nil, time.Minute},
		{"no interval", &fakeReader{}, &fakePublisher{}, 0},
	}
	for _, tt := range tests {
		if _, err := mysql.NewRefresher(tt.r, tt.p, tt.interval, nil, nil); err == nil {
			t.Errorf("%s: NewRefresher worked, want an error", tt.name)
		}
	}
}

// TestRefreshHandsOnWhatItRead: WithOnPublish's callback gets every read,
// whatever Redis does with it, and nothing when MySQL fails.
func TestRefreshHandsOnWhatItRead(t *testing.T) {
	var got []release.Bulletin
	f, r, p, _, _ := newRefresher(t, mysql.WithOnPublish(func(m release.Bulletin) { got = append(got, m) }))
	decided := release.Bulletin{Decisions: map[string]release.Decisions{"photocraft": {Rollout: &release.Rollout{Tag: "v1.0.0", Percent: 5}}}}
	steps := []struct {
		name      string
		readErr   error
		refused   bool
		redisErr  error
		wantCalls int
	}{
		{"written", nil, false, nil, 1},
		{"refused for a newer read", nil, true, nil, 2},
		{"redis down", nil, false, errors.New("redis down"), 3},
		{"mysql down", errors.New("mysql down"), false, nil, 3},
	}
	for _, st := range steps {
		r.set(decided, nil, st.readErr)
		p.refused, p.err = st.refused, st.redisErr
		_ = f.Refresh(context.Background())
		if len(got) != st.wantCalls || !reflect.DeepEqual(got[len(got)-1], decided) {
			t.Errorf("%s: called %d times with %+v, want %d calls with the read", st.name, len(got), got, st.wantCalls)
		}
	}
}
