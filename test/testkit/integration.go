package testkit

import (
	"fmt"
	"os"
	"testing"
)

// IntegrationEnv names the switch that turns the integration set on: the
// tests that start the real binaries or wait on the wall clock. They skip
// unless it is 1; `task test` sets it.
const IntegrationEnv = "CRAFT_TEST_INTEGRATION"

// integrationReason is why an integration test did not run.
const integrationReason = "an integration test (real binaries, the wall clock): set " + IntegrationEnv + "=1, as task test does"

// IntegrationOn reports whether the integration switch is on.
func IntegrationOn() bool { return os.Getenv(IntegrationEnv) == "1" }

// Integration skips t, with the reason, unless the integration switch is on.
func Integration(t testing.TB) {
	t.Helper()
	if !IntegrationOn() {
		t.Skip(integrationReason)
	}
}

// IntegrationMain is the body of the TestMain of a package whose every test
// and benchmark is an integration test: with the switch off it runs nothing,
// prints why and returns 0; with it on it returns run's exit code (m.Run, or
// a launcher's Main around it).
func IntegrationMain(run func() int) int {
	if !IntegrationOn() {
		fmt.Println("skipped: " + integrationReason)
		return 0
	}
	return run()
}
