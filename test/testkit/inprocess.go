package testkit

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
)

// RunFunc is a binary's run: the whole process, which main calls with the
// real arguments, environment and output.
type RunFunc func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error

// Process is one run of a binary inside the test process.
type Process struct {
	Logs   *Buffer // what run wrote to stderr
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// StartProcess calls run without arguments and with env as the environment
// until the test ends, and waits until GET health answers 200. It fails the
// test if run returns before that.
func StartProcess(t testing.TB, run RunFunc, env map[string]string, health string) *Process {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &Process{Logs: &Buffer{}, cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- run(ctx, nil, func(k string) string { return env[k] }, io.Discard, p.Logs) }()
	t.Cleanup(func() { _ = p.Stop() })
	Eventually(t, health+" answers 200", func() bool {
		select {
		case err := <-p.done:
			p.done <- err // for Stop
			t.Fatalf("run returned early: %v\nlogs:\n%s", err, p.Logs)
		default:
		}
		return Status(health) == http.StatusOK
	})
	return p
}

// Stop cancels run's context, as SIGTERM does, waits for run to return and
// returns its error; later calls return the same error.
func (p *Process) Stop() error {
	p.once.Do(func() { p.cancel(); p.err = <-p.done })
	return p.err
}

// Status returns the status of GET url, or 0 when there is no answer.
func Status(url string) int {
	res, _, err := Ask(nil, url)
	if err != nil {
		return 0
	}
	return res.StatusCode
}
