package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/github"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestShutdownFinishesRequestsInFlight holds a request in flight at SIGTERM
// for real: the body is larger than every socket buffer between the pod and
// a client that reads slowly, so the pod's handler is still writing.
func TestShutdownFinishesRequestsInFlight(t *testing.T) {
	t.Parallel()
	sndbuf := maxSendBuffer(t)
	rs := redistest.Start(t)
	s := newStore(t, rs.URL(), nil)
	at := time.Now().Truncate(time.Millisecond)

	// Enough apps with the largest releases the service keeps (200 assets,
	// 64 KiB of notes) to outgrow the largest send buffer by 1 MiB.
	one, err := release.Marshal(bigRelease(t, "storytold/app000", "v1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	n := (sndbuf+1<<20)/len(one) + 1
	apps := make([]string, n)
	for i := range apps {
		key := fmt.Sprintf("app%03d", i)
		repo := "storytold/" + key
		apps[i] = key + "=" + key + "=" + repo
		e := release.Entry{FetchedAt: at, ETag: `"` + key + `"`, Release: bigRelease(t, repo, "v1.0.0")}
		if ok, err := s.PutFetch(context.Background(), key, e); err != nil || !ok {
			t.Fatalf("put fetch %s: written %v, %v", key, ok, err)
		}
	}

	tests := []struct {
		name    string
		timeout time.Duration // SHUTDOWN_TIMEOUT_SECS
		read    bool          // the client reads its answer after SIGTERM
	}{
		{"a slow client gets its whole answer", 10 * time.Second, true},
		{"a stuck client is cut at the shutdown timeout", 2 * time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := podEnv(rs.URL(), strings.Join(apps, ","))
			env["SHUTDOWN_TIMEOUT_SECS"] = strconv.Itoa(int(tt.timeout / time.Second))
			p := start(t, "api", binary(t, "api"), env)
			var want []byte
			testkit.Eventually(t, "every app is served", func() bool {
				a := p.get(t)
				want = a.body
				return a.header.Get("Cache-Control") == "public, max-age=60, stale-while-revalidate=30, stale-if-error=86400"
			})
			if len(want) <= sndbuf {
				t.Fatalf("the body has %d bytes, want more than the %d a send buffer holds", len(want), sndbuf)
			}

			conn := dialSlow(t, p)
			if _, err := io.WriteString(conn, "GET "+infoPath+" HTTP/1.1\r\nHost: e2e\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(conn)
			// The answer began: the handler runs, and cannot finish writing.
			if _, err := r.Peek(1); err != nil {
				t.Fatal(err)
			}

			p.stopOnce.Do(func() {
				p.signal(t, syscall.SIGTERM)
				sent := time.Now()
				testkit.Eventually(t, "shutdown begins", func() bool { return p.logs.count("shutting down") > 0 })
				if got := p.status("/readyz"); got == http.StatusOK {
					t.Errorf("readyz after SIGTERM got 200, want 503 or no answer")
				}
				if !tt.read {
					select {
					case <-p.exited:
					case <-time.After(waitFor):
						t.Fatalf("still running %v after SIGTERM with SHUTDOWN_TIMEOUT_SECS=%d", waitFor, tt.timeout/time.Second)
					}
					t.Logf("exited %v after SIGTERM with a stuck request: %v", time.Since(sent), p.err)
					return
				}
				// Read at full speed now: the window opens again.
				if err := conn.(*net.TCPConn).SetReadBuffer(4 << 20); err != nil {
					t.Fatal(err)
				}
				res, err := http.ReadResponse(r, nil)
				if err != nil {
					t.Fatalf("read the answer in flight: %v", err)
				}
				body, err := io.ReadAll(res.Body)
				if err != nil || res.StatusCode != http.StatusOK || !bytes.Equal(body, want) {
					t.Errorf("the answer in flight at SIGTERM got %d, %d of %d bytes, %v; want 200 and the whole body",
						res.StatusCode, len(body), len(want), err)
				}
				p.wait(t)
				t.Logf("exited %v after SIGTERM, once the %d-byte answer in flight was read", time.Since(sent), len(want))
			})
		})
	}
}

// maxSendBuffer returns the largest send buffer Linux gives a TCP socket
// (the third value of net.ipv4.tcp_wmem).
func maxSendBuffer(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem")
	if err != nil {
		t.Skipf("no Linux TCP buffer sizes to hold a request in flight with: %v", err)
	}
	f := strings.Fields(string(b))
	n, err := strconv.Atoi(f[len(f)-1])
	if err != nil {
		t.Fatalf("tcp_wmem %q: %v", b, err)
	}
	return n
}

// dialSlow connects to p with a tiny receive buffer, so that what the client
// does not read stays on the pod's side.
func dialSlow(t testing.TB, p *proc) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(p.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// bigRelease is a release of repo as large as the service keeps one: 200
// assets and 64 KiB of notes.
func bigRelease(t testing.TB, repo, tag string) *release.Release {
	t.Helper()
	r := fakegithub.NewRelease(repo, tag)
	_, project, _ := strings.Cut(repo, "/")
	r.Body = strings.Repeat("A line of release notes. ", 64<<10/25)
	r.Assets = make([]fakegithub.Asset, github.MaxAssets)
	for i := range r.Assets {
		name := fmt.Sprintf("%s-%s-part%03d-linux-x86_64.tar.gz", project, strings.TrimPrefix(tag, "v"), i)
		sum := sha256.Sum256([]byte(name))
		r.Assets[i] = fakegithub.Asset{
			ID: int64(i), Name: name, State: "uploaded", Size: 1 << 20,
			Digest:             "sha256:" + hex.EncodeToString(sum[:]),
			BrowserDownloadURL: "https://github.com/" + repo + "/releases/download/" + tag + "/" + name,
		}
	}
	rel, err := github.ParseRelease(release.App{Repo: repo}, r.JSON())
	if err != nil {
		t.Fatalf("parse a big release: %v", err)
	}
	return rel
}
