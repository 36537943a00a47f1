package velopack

import "github.com/storytold/craft-releases/pkg/updates/semver"

// maxInt is the largest version number the C# client reads (an int).
const maxInt = 1<<31 - 1

// validVersion reports whether s is a version that both clients read, and
// order, alike: SemVer 2.0.0 as the Rust semver crate parses it
// (semver.Parse: no leading "v", no white space, at most 256 bytes), which
// the C# client's SemanticVersion also accepts when, as it reads them as an
// int, every number of the core and of the pre-release is at most
// 2^31 − 1.
func validVersion(s string) bool {
	v, ok := semver.Parse(s)
	return ok && v.CoreAtMost(maxInt) && v.PreAtMost(maxInt)
}
