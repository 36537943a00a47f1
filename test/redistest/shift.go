package redistest

import (
	_ "embed"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

//go:embed clockshift/shift.c
var shiftSource []byte

// Shift is the offset of a StartShifted server's wall clock from the
// machine's. Its methods may be called while the server runs.
type Shift struct {
	t    testing.TB
	file *os.File
}

// StartShifted is Start with redis-server's wall clock (what TIME answers)
// off the machine's by shift, until Shift.Set moves it: NTP stepping the
// Redis host, or a failover to a node whose clock differs. The server runs
// with an LD_PRELOAD shim (clockshift/shift.c, built here with gcc) that
// moves CLOCK_REALTIME, gettimeofday and time, never the monotonic clock.
func StartShifted(t testing.TB, shift time.Duration, args ...string) (*Server, *Shift) {
	t.Helper()
	dir := t.TempDir()
	src, lib := filepath.Join(dir, "shift.c"), filepath.Join(dir, "shift.so")
	if err := os.WriteFile(src, shiftSource, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-O2", "-Wall", "-o", lib, src, "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("build the clock shim (the test task installs gcc): %v\n%s", err, out)
	}
	f, err := os.Create(filepath.Join(dir, "shift"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	sh := &Shift{t: t, file: f}
	sh.Set(shift)
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found (the test task installs it: apt-get install redis-server): %v", err)
	}
	s := &Server{t: t, args: args, env: []string{"LD_PRELOAD=" + lib, "CLOCK_SHIFT_FILE=" + f.Name()}}
	s.startFresh()
	t.Cleanup(s.Stop)
	return s, sh
}

// Set moves the server's clock to the machine's plus d, at once.
func (s *Shift) Set(d time.Duration) {
	s.t.Helper()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(d.Nanoseconds()))
	if _, err := s.file.WriteAt(b[:], 0); err != nil {
		s.t.Fatalf("shift redis's clock: %v", err)
	}
}
