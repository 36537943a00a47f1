//go:build race

package testkit

// RaceEnabled reports whether the binary was built with the race detector,
// which changes allocation counts and slows what it instruments: tests and
// benchmarks that measure either skip when it is set.
const RaceEnabled = true
