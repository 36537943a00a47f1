package redistest

import (
	_ "embed"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/testkit"
)

//go:embed clockshift/shift.c
var shiftSource []byte

// Shift is an offset of redis-servers' wall clocks (what TIME answers) from
// the machine's, for the servers it starts and their replicas: NTP stepping
// the Redis host, or a failover to a node whose clock differs, is Set. The
// servers run with an LD_PRELOAD shim (clockshift/shift.c, built here with
// gcc) that moves CLOCK_REALTIME, gettimeofday and time, never the
// monotonic clock. Its methods may be called while the servers run.
type Shift struct {
	t    testing.TB
	file *os.File
	env  []string
}

// NewShift builds the shim and returns a Shift of d.
func NewShift(t testing.TB, d time.Duration) *Shift {
	t.Helper()
	dir := t.TempDir()
	src, lib := filepath.Join(dir, "shift.c"), filepath.Join(dir, "shift.so")
	if err := os.WriteFile(src, shiftSource, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("gcc"); err != nil && !testkit.IntegrationOn() {
		t.Skipf("no gcc to build the clock shim (the test task installs it): %v", err)
	}
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-O2", "-Wall", "-o", lib, src, "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("build the clock shim (the test task installs gcc): %v\n%s", err, out)
	}
	f, err := os.Create(filepath.Join(dir, "shift"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	s := &Shift{t: t, file: f, env: []string{"LD_PRELOAD=" + lib, "CLOCK_SHIFT_FILE=" + f.Name()}}
	s.Set(d)
	return s
}

// Start runs redis-server as Start does, its clock moved by s.
func (s *Shift) Start(t testing.TB, args ...string) *Server {
	t.Helper()
	return start(t, &Server{t: t, args: args, env: s.env})
}

// Set moves the clocks of s's servers to the machine's plus d, at once.
func (s *Shift) Set(d time.Duration) {
	s.t.Helper()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(d.Nanoseconds()))
	if _, err := s.file.WriteAt(b[:], 0); err != nil {
		s.t.Fatalf("shift redis's clock: %v", err)
	}
}
