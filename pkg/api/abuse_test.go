package api

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/webhook"
)

// TestUnsignedBodiesHeldInBoundedMemory: 300 senders each holding a webhook
// body of MaxBody less one byte, with a junk signature, raise the heap by a
// few readers' worth, not 300 bodies' (150 MiB with today's limit, 300 MiB
// with the old 1 MiB one), and a launcher is answered meanwhile (issue 21,
// item 1).
func TestUnsignedBodiesHeldInBoundedMemory(t *testing.T) {
	const senders = 300
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- New(fixed{rendering(t, true)}, new(Gate), zap.NewNop(), Options{Webhook: webhookHandler(t, true)}).Serve(ctx, ln, 20*time.Second)
	}()
	defer func() {
		cancel() // the 300 connections take a moment to close on a busy machine
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	addr := ln.Addr().String()
	before := liveHeap()
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peak.Store(max(peak.Load(), liveHeap()))
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s: release\r\n%s: sha256=%s\r\n\r\n",
		WebhookPath, webhook.MaxBody, webhook.EventHeader, webhook.SignatureHeader, strings.Repeat("0", 64))
	chunk := strings.Repeat("a", 64<<10)
	var wg sync.WaitGroup
	conns := make(chan net.Conn, senders)
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			conns <- c
			_ = c.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := io.WriteString(c, head); err != nil {
				return
			}
			for left := webhook.MaxBody - 1; left > 0; left -= len(chunk) {
				if _, err := io.WriteString(c, chunk[:min(left, len(chunk))]); err != nil {
					return // answered early and closed: 503
				}
			}
		}()
	}
	if r := <-get("http://" + addr + ReleaseInfoPath); r.err != nil || r.status != http.StatusOK {
		t.Errorf("a launcher during the flood: %d, %v; want 200", r.status, r.err)
	}
	wg.Wait()
	close(stop)
	<-sampled
	close(conns)
	for c := range conns {
		c.Close()
	}
	grew := int64(peak.Load()) - int64(before)
	t.Logf("live heap %.1f MiB before, %.1f MiB at the peak of %d held unsigned bodies", mib(before), mib(peak.Load()), senders)
	// The readers' buffers, and each connection's own few tens of KiB (its
	// bufio buffers, its request, the test's client side): measured at 5 to
	// 26 MiB, bounded at a third of what the bodies would take (150 MiB).
	if limit := int64(senders * webhook.MaxBody / 3); grew > limit {
		t.Errorf("the live heap grew by %.1f MiB under %d held unsigned bodies, want at most %.1f MiB", float64(grew)/(1<<20), senders, float64(limit)/(1<<20))
	}
}

// liveHeap is the heap that a collection leaves: what is held, not garbage.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// BenchmarkLauncherDuringOneByteFlood reports how long a launcher waits for
// the full answer while 3,000 connections, each having sent one byte, are
// renewed as the server closes them, at the default cap (issue 21, item 4):
// worst-ms and median-ms over b.N launchers.
func BenchmarkLauncherDuringOneByteFlood(b *testing.B) {
	const flooders = 3000
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- New(fixed{rendering(b, true)}, new(Gate), zap.NewNop(), Options{}).Serve(ctx, ln, 20*time.Second)
	}()
	addr := ln.Addr().String()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range flooders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1)
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					continue
				}
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				if _, err := c.Write([]byte("G")); err == nil {
					_, _ = c.Read(buf) // until the server closes it
				}
				c.Close()
			}
		}()
	}
	time.Sleep(3 * time.Second) // the flood fills the cap
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		res, err := client.Get("http://" + addr + ReleaseInfoPath)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	close(stop)
	cancel()
	wg.Wait()
	<-served
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "worst-ms")
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
}
