// Package soak is the chaos soak of the split deployment: the real binaries
// (3 pollers, 3 API pods) against a Redis primary with a replica and 3
// sentinels and a fake GitHub that keeps publishing releases, under a bounded
// load and a seeded random schedule of faults. Its one test, TestSoak, checks
// the promises of the specification on everything it recorded and writes a
// report directory (figures as JSON, a timeline picture). See the README,
// "The chaos soak".
package soak
