package squirrel

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Stage returns body, a RELEASES file that Parse accepts (as Absolute
// serves it), with every package of version (full and delta) staged to
// percent of installs: the package's line ends in " # <percent>%",
// replacing the publisher's staged rollout if it had one; at 100 the line
// ends without one, which Squirrel.Windows offers to every install (with
// "# 100%" it would skip an install that has no staging id). Every other
// byte is body's: the other lines, the byte order mark, the line endings,
// but for a staged line that ended in CR LF, which ends in LF, since
// Squirrel.Windows does not read a staged rollout before a CR.
//
// version is a release's version as its packages' names carry it
// (1.2.0, 1.2.0-beta2), after at most one leading "v": electron-builder
// and Electron Forge name a package for the SemVer 1.2.0-beta.2+build
// 1.2.0-beta2, and so is that version read. Versions are equal as
// Squirrel.Windows compares them: 1.2 is 1.2.0.0, a tag in any letter
// case.
//
// The error says that percent is not 0 to 100, that version is not one,
// that Parse refuses body, or that no package is of version. Parse reads
// the result as it reads body, with those packages staged
// (docs/updates.md, "A staged rollout in RELEASES").
func Stage(body []byte, version string, percent int) ([]byte, error) {
	if percent < 0 || percent > 100 {
		return nil, fmt.Errorf("staged rollout %d%%: not 0 to 100", percent)
	}
	want, ok := squirrelVersion(version)
	if !ok {
		return nil, fmt.Errorf("version %s: not one a package's name carries, as in 1.2.0 or 1.2.0-beta2", excerpt(version))
	}
	if _, err := Parse(body); err != nil {
		return nil, err
	}
	var out []byte
	staged := false
	for i, line := range bytes.SplitAfter(body, []byte("\n")) {
		text := string(line)
		if i == 0 {
			// The byte order mark stays; the line is read past it.
			if rest, ok := strings.CutPrefix(text, "\uFEFF"); ok {
				out = append(out, "\uFEFF"...)
				text = rest
			}
		}
		e, ok, _ := parseLine(strings.TrimSuffix(text, "\n"))
		if v, _ := packageVersion(e.Name); !ok || !sameVersion(v, want) {
			out = append(out, text...)
			continue
		}
		staged = true
		content := strings.TrimRight(text, "\r\n")
		if e.Staged {
			// Parse allows no other "#" on a line.
			content = strings.TrimRight(content[:strings.LastIndexByte(content, '#')], " \t")
		}
		out = append(out, content...)
		if percent < 100 {
			out = append(out, " # "...)
			out = strconv.AppendInt(out, int64(percent), 10)
			out = append(out, '%')
		}
		switch {
		case !strings.HasSuffix(text, "\n"):
		case percent == 100 && strings.HasSuffix(text, "\r\n"):
			out = append(out, "\r\n"...)
		default:
			out = append(out, '\n')
		}
	}
	if !staged {
		return nil, fmt.Errorf("no package of version %s", excerpt(version))
	}
	return out, nil
}

// squirrelVersion returns s as a package's name carries it: without one
// leading "v" and build metadata, a pre-release's "." dropped (as
// electron-builder's and electron-winstaller's convertVersion write it),
// when it is then a version Squirrel.Windows reads.
func squirrelVersion(s string) (string, bool) {
	s, _, _ = strings.Cut(strings.TrimPrefix(s, "v"), "+")
	if nums, tag, ok := strings.Cut(s, "-"); ok {
		s = nums + "-" + strings.ReplaceAll(tag, ".", "")
	}
	return s, nugetVersion(s)
}

// sameVersion reports whether a and b, versions nugetVersion accepts, are
// equal as NuGet's SemanticVersion compares them: each number as a number,
// a missing one as 0, the tags without regard to letter case.
func sameVersion(a, b string) bool {
	an, at, _ := strings.Cut(a, "-")
	bn, bt, _ := strings.Cut(b, "-")
	if !strings.EqualFold(at, bt) {
		return false
	}
	ap, bp := strings.Split(an, "."), strings.Split(bn, ".")
	for i := range 4 {
		if versionPart(ap, i) != versionPart(bp, i) {
			return false
		}
	}
	return true
}

// versionPart returns the i'th of parts as a number, 0 when there is none:
// nugetVersion allows at most 9 digits each.
func versionPart(parts []string, i int) int {
	if i >= len(parts) {
		return 0
	}
	n, _ := strconv.Atoi(parts[i])
	return n
}
