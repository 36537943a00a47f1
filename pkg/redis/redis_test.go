package redis

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/storytold/craft-releases/test/redistest"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		url     string
		wantErr string // a prefix of the error; "" for none
	}{
		{"redis", "redis://:hunter2@127.0.0.1:1", ""},
		{"redis with a user and a database", "redis://poller:hunter2@127.0.0.1:1/2", ""},
		{"rediss", "rediss://poller:hunter2@127.0.0.1:1", ""},
		{"cluster", "redis://:hunter2@127.0.0.1:1?addr=127.0.0.1:2&addr=127.0.0.1:3", ""},
		{"sentinel", "redis://127.0.0.1:1?master_set=main", ""},
		{"bad escape in the password", "redis://poller:hun%zzter2@127.0.0.1:1", "not a valid URL"},
		{"bad port", "redis://poller:hunter2@127.0.0.1:port", "not a valid URL"},
		{"bad scheme", "http://poller:hunter2@127.0.0.1:1", "the scheme is not redis"},
		{"no scheme", "127.0.0.1:6379", "not a valid URL"},
		{"bad database", "redis://poller:hunter2@127.0.0.1:1/db", "not a valid URL"},
		{"bad path", "redis://poller:hunter2@127.0.0.1:1/0/1", "not a valid URL"},
		{"a password with an unencoded /", "redis://poller:hun/ter2@127.0.0.1:1", "not a valid URL"},
		{"a password with an unencoded #", "redis://poller:hun#ter2@127.0.0.1:1", "not a valid URL"},
		{"control character", "redis://poller:hunter2\n@127.0.0.1:1", "not a valid URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.url)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Parse(%q): %v", tt.url, err)
			case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)):
				t.Fatalf("Parse(%q) error = %v, want %q…", tt.url, err, tt.wantErr)
			}
			for _, secret := range []string{"hunter2", "hun", "zzter2", "ter2"} {
				if err != nil && strings.Contains(err.Error(), secret) {
					t.Errorf("error %q shows the password (%q)", err, secret)
				}
			}
		})
	}
}

func TestOptions(t *testing.T) {
	o, err := Parse("redis://poller:hunter2@127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	opt := o.clientOption()
	if opt.Dialer.Timeout != connectTimeout || o.Timeout() != callTimeout || opt.ClientSetInfo == nil {
		t.Errorf("dial %v, call %v, CLIENT SETINFO %v; want %v, %v, disabled", opt.Dialer.Timeout, o.Timeout(), opt.ClientSetInfo, connectTimeout, callTimeout)
	}
	if got := o.Scrub("WRONGPASS hunter2"); got != "WRONGPASS [redacted]" {
		t.Errorf("Scrub = %q, want the password masked", got)
	}
	if o, err = Parse("redis://127.0.0.1:1?dial_timeout=1s&write_timeout=2s"); err != nil || o.clientOption().Dialer.Timeout != time.Second || o.Timeout() != 2*time.Second {
		t.Errorf("the URL's timeouts: %v, %v, %v; want 1s, 2s", err, o.clientOption().Dialer.Timeout, o.Timeout())
	}
}

func TestWithTLS(t *testing.T) {
	pool := x509.NewCertPool()
	extra := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{{}}}
	plain, _ := Parse("redis://127.0.0.1:1")
	if got := plain.WithTLS(extra).clientOption().TLSConfig; got != nil {
		t.Errorf("redis:// with TLS files: TLSConfig = %v, want none", got)
	}
	secure, _ := Parse("rediss://redis.internal:6380?skip_verify=true&master_set=main")
	opt := secure.WithTLS(extra).clientOption()
	if c := opt.TLSConfig; c == nil || c.RootCAs != pool || len(c.Certificates) != 1 || c.ServerName != "redis.internal" || !c.InsecureSkipVerify {
		t.Errorf("rediss:// with TLS files: TLSConfig = %+v, want the files' roots and certificate, the URL's server name and skip_verify", c)
	}
	if opt.Sentinel.TLSConfig != opt.TLSConfig {
		t.Error("the sentinels are not reached over the same TLS")
	}
	if secure.clientOption().TLSConfig.RootCAs != nil {
		t.Error("WithTLS changed the Options it was called on")
	}
}

// TestConnWhileDown: a Conn of a Redis that is down does not dial when
// opened, fails at once while Redis refuses connections, and connects once it
// is back.
func TestConnWhileDown(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	c, err := OpenURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	if _, err := c.Client(ctx); !errors.Is(err, syscall.ECONNREFUSED) || time.Since(began) > connectTimeout {
		t.Errorf("Client of a down Redis: %v after %v, want the refusal at once", err, time.Since(began))
	}
	srv.Restart()
	client, err := c.Client(ctx)
	if err != nil {
		t.Fatalf("Client once Redis is back: %v", err)
	}
	if err := client.Do(ctx, client.B().Ping().Build()).Error(); err != nil {
		t.Errorf("PING: %v", err)
	}
	if again, _ := c.Client(ctx); again != client {
		t.Error("a second Client made another client")
	}
	c.Close()
	if _, err := c.Client(ctx); !errors.Is(err, rueidis.ErrClosing) {
		t.Errorf("Client after Close: %v, want %v", err, rueidis.ErrClosing)
	}
}

func TestRetryDelay(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name     string
		attempts int
		err      error
		retry    bool
	}{
		{"a refused connection", 1, refused, false},
		{"a refused connection, wrapped", 3, fmt.Errorf("load: %w", refused), false},
		{"a dropped connection", 1, io.EOF, true},
		{"a timeout", 5, os.ErrDeadlineExceeded, true},
		{"many attempts", 1000, io.EOF, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := retryDelay(tt.attempts, rueidis.Completed{}, tt.err)
			switch {
			case !tt.retry && d >= 0:
				t.Errorf("got a retry after %v, want none (negative)", d)
			case tt.retry && (d < 0 || d > time.Second):
				t.Errorf("got %v, want a retry within a second", d)
			}
		})
	}
}

// TestConnThroughTLSSentinels: with a rediss:// URL and master_set, a Conn
// asks the sentinels over TLS too (rueidis.ParseURL gives them no TLS of
// their own), trusting the CA of WithTLS, and writes to the primary they
// name.
func TestConnThroughTLSSentinels(t *testing.T) {
	ca := redistest.NewCA(t)
	primary := redistest.StartTLS(t, ca)
	sentinels := redistest.StartSentinels(t, "craft", primary, 1, 1)
	o, err := Parse(redistest.SentinelURL("craft", sentinels...))
	if err != nil {
		t.Fatal(err)
	}
	c := Open(o.WithTLS(&tls.Config{RootCAs: ca.Pool}))
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := c.Client(ctx)
	if err != nil {
		t.Fatalf("connect through the TLS sentinels: %v", err)
	}
	if err := client.Do(ctx, client.B().Set().Key("k").Value("v").Build()).Error(); err != nil {
		t.Fatalf("SET through the TLS sentinels: %v", err)
	}
	if got, err := primary.Query("GET", "k"); err != nil || got != "v" {
		t.Errorf("GET k on the primary = %v, %v; want v", got, err)
	}
}

// TestCloseWhileDialing: Close during an attempt still in flight answers
// later callers at once, and the client the attempt then makes is closed,
// not kept: a proxy holds the handshake back until after Close.
func TestCloseWhileDialing(t *testing.T) {
	srv := redistest.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted, release := make(chan struct{}, 16), make(chan struct{})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			go func() {
				defer c.Close()
				<-release
				up, err := net.Dial("tcp", srv.Addr)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c) }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	c, err := OpenURL("redis://" + ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := make(chan error, 1)
	go func() {
		_, err := c.Client(ctx)
		first <- err
	}()
	<-accepted // the attempt is in flight
	c.Close()
	if _, err := c.Client(ctx); !errors.Is(err, rueidis.ErrClosing) {
		t.Errorf("Client after Close, during the attempt: %v, want %v", err, rueidis.ErrClosing)
	}
	close(release)
	if err := <-first; !errors.Is(err, rueidis.ErrClosing) {
		t.Errorf("the caller waiting on the attempt: %v, want %v", err, rueidis.ErrClosing)
	}
	c.mu.Lock()
	kept := c.client
	c.mu.Unlock()
	if kept != nil {
		t.Error("the Conn kept a client after Close")
	}
}
