package daemon

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
)

// floodHandler answers the health endpoints, and GET /big with 64 KiB: an
// answer a client that does not read soon stops taking.
func floodHandler() http.Handler {
	health := NewHealth(new(Gate), nil, zap.NewNop(), nil)
	big := bytes.Repeat([]byte("x"), 64<<10)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			_, _ = w.Write(big)
			return
		}
		health.ServeHTTP(w, r)
	})
}

// A flooder holds one connection of a flood the way the flood does, until the
// server closes it or stop is closed.
type flooder func(c net.Conn, stop <-chan struct{})

// untilClosed reads c until the server closes it.
func untilClosed(c net.Conn, _ <-chan struct{}) { _, _ = io.Copy(io.Discard, c) }

// trickle writes p to c every every, until a write fails (the server closed
// c) or stop is closed.
func trickle(c net.Conn, stop <-chan struct{}, p []byte, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := c.Write(p); err != nil {
			return
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// floods are the ways a client can hold a connection for almost nothing
// (docs/operations.md, "Which port is public").
var floods = []struct {
	name string
	hold flooder
}{
	{"one-byte", func(c net.Conn, stop <-chan struct{}) {
		if _, err := io.WriteString(c, "G"); err == nil {
			untilClosed(c, stop)
		}
	}},
	{"idle", func(c net.Conn, stop <-chan struct{}) {
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err == nil {
			untilClosed(c, stop) // the answer, then nothing until it is closed
		}
	}},
	{"pipelined-unread", func(c net.Conn, stop <-chan struct{}) {
		// A small receive buffer bounds what the flood costs this machine.
		_ = c.(*net.TCPConn).SetReadBuffer(16 << 10)
		// 4 MiB of answers at once, more than the connection's buffers hold;
		// then a request now and then, until a write fails.
		req := "GET /big HTTP/1.1\r\nHost: x\r\n\r\n"
		if _, err := io.WriteString(c, strings.Repeat(req, 64)); err == nil {
			trickle(c, stop, []byte(req), 100*time.Millisecond)
		}
	}},
	{"slow-body", func(c net.Conn, stop <-chan struct{}) {
		if _, err := io.WriteString(c, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n"); err == nil {
			trickle(c, stop, []byte("x"), 500*time.Millisecond)
		}
	}},
}

// BenchmarkLauncherDuringFlood reports how long launchers wait for a full
// answer, each on a new connection, while 3,000 connections of one flood
// are renewed as the server closes them, at the default cap: p50-ms and
// p99-ms over the launchers answered, and failures, those not answered
// within 20 s. Loopback only; every loop ends with the benchmark.
//
//	go test -run '^$' -bench LauncherDuringFlood -benchtime 50x ./pkg/daemon/
func BenchmarkLauncherDuringFlood(b *testing.B) {
	for _, f := range floods {
		b.Run(f.name, func(b *testing.B) { launchDuring(b, f.hold) })
	}
}

func launchDuring(b *testing.B, hold flooder) {
	const flooders = 3000
	ln := listen(b)
	cancel, served := startServe(Endpoint{Handler: floodHandler(), Listener: ln}, serverTimeouts, time.Second)
	addr := ln.Addr().String()
	stop := make(chan struct{})
	var mu sync.Mutex
	open := make(map[net.Conn]struct{})
	var wg sync.WaitGroup
	for range flooders {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				mu.Lock()
				open[c] = struct{}{}
				mu.Unlock()
				_ = c.SetDeadline(time.Now().Add(60 * time.Second))
				hold(c, stop)
				mu.Lock()
				delete(open, c)
				mu.Unlock()
				c.Close()
			}
		})
	}
	time.Sleep(3 * time.Second) // the flood fills the cap

	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var took []time.Duration
	failed := 0
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		res, err := client.Get("http://" + addr + HealthzPath)
		if err == nil {
			_, err = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if err == nil && res.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", res.StatusCode)
			}
		}
		if err != nil {
			failed++
			if failed <= 3 {
				b.Logf("launcher %d: %v after %v", len(took)+failed, err, time.Since(start).Round(time.Millisecond))
			}
			continue
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	close(stop)
	mu.Lock()
	for c := range open {
		c.Close()
	}
	mu.Unlock()
	cancel()
	wg.Wait()
	if err := <-served; err != nil {
		b.Errorf("serve: %v", err)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(failed), "failures")
	if len(took) > 0 {
		slices.Sort(took)
		b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
		b.ReportMetric(ms(took[(len(took)*99-1)/100]), "p99-ms")
	}
}
