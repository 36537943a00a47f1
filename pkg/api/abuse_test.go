package api

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/routes"
	"github.com/storytold/craft-releases/pkg/webhook"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestUnsignedBodiesHeldInBoundedMemory: 300 senders each holding a webhook
// body of MaxBody less one byte, with a junk signature, raise the heap by a
// few readers' worth, not 300 bodies' (150 MiB with today's limit, 300 MiB
// with the old 1 MiB one), and a launcher is answered meanwhile.
func TestUnsignedBodiesHeldInBoundedMemory(t *testing.T) {
	const senders = 300
	ln := testkit.Listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		api := New(fixed{rendering(t, true)}, new(daemon.Gate), zap.NewNop(), Options{Webhook: webhookHandler(t, true)})
		served <- daemon.Serve(ctx, daemon.Endpoint{Handler: api, Listener: ln}, 20*time.Second, zap.NewNop())
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
		routes.WebhookPath, webhook.MaxBody, webhook.EventHeader, webhook.SignatureHeader, strings.Repeat("0", 64))
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
	if res, err := http.Get("http://" + addr + routes.ReleaseInfoPath); err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("a launcher during the flood: %v, %v; want 200", res, err)
	} else {
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
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
