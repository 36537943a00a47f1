package soak

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one process of the deployment: a poller or an API pod. A poller
// that is killed and started again is a new proc (poller-2#1, poller-2#2).
type proc struct {
	name    string // "poller-2#1", "api-3#1"
	role    string // "poller" or "api"
	slot    int    // 1…3 within its role
	cmd     *exec.Cmd
	base    string // "http://" and the address it logged as listening on
	metrics string // the same for its metrics_addr (an API's METRICS_ADDR); "" for the base
	started time.Time

	exited   chan struct{} // closed once it exited and its output was read
	mu       sync.Mutex
	ended    time.Time
	err      error
	killed   bool
	logged   map[string]int // log lines by message
	backoffs []backoff      // each fleet backoff it logged setting
}

// backoff is a fleet backoff a poller's round set, from when its log line was
// read until it ends.
type backoff struct{ From, Until time.Time }

// pollRound is the message of a poller's line for each round, which says the
// fleet backoff it set, in seconds (docs/operations.md, "When something goes wrong").
const pollRound = "poll round"

// launch starts path with exactly env (plus HTTP_ADDR and, for an API,
// METRICS_ADDR on free loopback ports), its output appended to logPath, and
// waits until it logs the addresses it listens on.
func launch(name, role string, slot int, path, logPath string, env map[string]string) (*proc, error) {
	p := &proc{name: name, role: role, slot: slot, exited: make(chan struct{}), logged: make(map[string]int)}
	p.cmd = exec.Command(path)
	p.cmd.Env = []string{"HTTP_ADDR=127.0.0.1:0", "METRICS_ADDR=127.0.0.1:0"} // the poller reads no METRICS_ADDR
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		r.Close()
		w.Close()
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	w.Close()
	p.started = time.Now()
	type addrs struct{ addr, metrics string }
	listening := make(chan addrs, 1)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logFile, line)
			var rec struct {
				Msg, Addr   string
				MetricsAddr string  `json:"metrics_addr"`
				Backoff     float64 `json:"backoff"`
			}
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			p.mu.Lock()
			p.logged[rec.Msg]++
			if rec.Msg == pollRound && rec.Backoff > 0 {
				now := time.Now()
				p.backoffs = append(p.backoffs, backoff{now, now.Add(time.Duration(rec.Backoff * float64(time.Second)))})
			}
			p.mu.Unlock()
			if rec.Msg == "listening" && rec.Addr != "" {
				select {
				case listening <- addrs{rec.Addr, rec.MetricsAddr}:
				default:
				}
			}
		}
		_, _ = io.Copy(logFile, r)
		r.Close()
		logFile.Close()
		err := p.cmd.Wait()
		p.mu.Lock()
		p.ended, p.err = time.Now(), err
		p.mu.Unlock()
		close(p.exited)
	}()
	select {
	case a := <-listening:
		p.base = "http://" + a.addr
		if a.metrics != "" {
			p.metrics = "http://" + a.metrics
		}
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("%s exited at start-up: %w (log: %s)", name, p.err, logPath)
	case <-time.After(waitFor):
		p.kill()
		return nil, fmt.Errorf("%s did not log a listening address in %v (log: %s)", name, waitFor, logPath)
	}
}

// kill sends SIGKILL and waits for the exit.
func (p *proc) kill() {
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop sends SIGTERM and waits for the exit, killing it after waitFor; it
// returns the exit error, nil for status 0.
func (p *proc) stop() error {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(waitFor):
			p.kill()
			return fmt.Errorf("%s still ran %v after SIGTERM; killed", p.name, waitFor)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed {
		return nil
	}
	return p.err
}

// alive reports whether the process has not exited.
func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// count returns how many of its log lines had the message msg.
func (p *proc) count(msg string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logged[msg]
}

// endedAt is when the process exited, or the zero time while it runs.
func (p *proc) endedAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ended
}

// metricsURL is where the process serves its Prometheus metrics: an API pod
// on its METRICS_ADDR, a poller on its one port.
func metricsURL(p *proc) string {
	if p.metrics != "" {
		return p.metrics + "/metrics"
	}
	return p.base + "/metrics"
}

// processStats is what the soak reads of a process's metrics.
type processStats struct {
	At         time.Time `json:"at"`
	Goroutines float64   `json:"goroutines"`
	HeapInuse  float64   `json:"heap_inuse_bytes"`
	RSS        float64   `json:"rss_bytes"`
}

var scrapeClient = &http.Client{Timeout: 5 * time.Second}

// scrape reads the process's goroutines and memory from its metrics.
func scrape(p *proc) (processStats, error) {
	res, err := scrapeClient.Get(metricsURL(p))
	if err != nil {
		return processStats{}, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return processStats{}, fmt.Errorf("GET %s: %d", metricsURL(p), res.StatusCode)
	}
	st := processStats{At: time.Now()}
	want := map[string]*float64{
		"go_goroutines":                 &st.Goroutines,
		"go_memstats_heap_inuse_bytes":  &st.HeapInuse,
		"process_resident_memory_bytes": &st.RSS,
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	found := 0
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if dst, hit := want[name]; ok && hit {
			if *dst, err = strconv.ParseFloat(strings.TrimSpace(value), 64); err != nil {
				return processStats{}, fmt.Errorf("%s: %s %q", p.name, name, value)
			}
			found++
		}
	}
	if found != len(want) {
		return processStats{}, fmt.Errorf("%s: %d of %d process metrics in %s", p.name, found, len(want), metricsURL(p))
	}
	return st, sc.Err()
}

// buildBinaries builds cmd/api and cmd/poller into dir, as test/e2e does:
// without the race detector, since the processes are what is observed.
func buildBinaries(dir string) error {
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		module+"/cmd/api", module+"/cmd/poller")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
}
