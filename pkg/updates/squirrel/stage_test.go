package squirrel_test

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/updates/squirrel"
)

// Lines of RELEASES files, by release: as Absolute serves them (URLs), and
// as publishers write them (names, a staged rollout of their own).
const (
	full120  = "3a2eadd15dd984e4559f2b4d790ec8badaeb6a39 https://github.com/storytold/photocraft/releases/download/v1.2.0/PhotoCraft-1.2.0-full.nupkg 104857600"
	delta120 = "14db31d2647c6d2284882a2e101924a9c409ee67 https://github.com/storytold/photocraft/releases/download/v1.2.0/PhotoCraft-1.2.0-delta.nupkg 5242880"
	full110  = "0c5c5d5e9f1a2b3c4d5e6f708192a3b4c5d6e7f8 PhotoCraft-1.1.0-full.nupkg 99000000"
	beta     = "ABCDEF0123456789ABCDEF0123456789ABCDEF01 PhotoCraft-1.2.0-beta2-full.nupkg 1000"
)

func TestStage(t *testing.T) {
	tests := []struct {
		name, body, version string
		percent             int
		want, err           string // err: a piece of Stage's error, for a file, version or percentage it refuses
	}{
		{"served, every package of the release", full120 + "\n" + delta120 + "\n", "1.2.0", 10, full120 + " # 10%\n" + delta120 + " # 10%\n", ""},
		{"none", full120 + "\n", "1.2.0", 0, full120 + " # 0%\n", ""},
		{"the publisher's rollout replaced", full120 + " # 50%\n" + delta120 + "\t#\t5%\n", "1.2.0", 25, full120 + " # 25%\n" + delta120 + " # 25%\n", ""},
		{"everyone: the rollout removed", full120 + " # 50%\n" + delta120 + "\n", "1.2.0", 100, full120 + "\n" + delta120 + "\n", ""},
		{"everyone, nothing staged", full120 + "\n", "1.2.0", 100, full120 + "\n", ""},
		{"other releases untouched", full110 + " # 30%\n" + full120 + "\n", "1.2.0", 10, full110 + " # 30%\n" + full120 + " # 10%\n", ""},
		{"the older release staged", full110 + "\n" + full120 + "\n", "1.1.0", 90, full110 + " # 90%\n" + full120 + "\n", ""},
		{"byte order mark, CR LF, blank lines, no last line feed", "\uFEFF" + full110 + "\r\n\r\n \t\n" + full120 + "\r\n" + delta120, "1.2.0", 10, "\uFEFF" + full110 + "\r\n\r\n \t\n" + full120 + " # 10%\n" + delta120 + " # 10%", ""},
		{"a staged first line after a byte order mark", "\uFEFF" + full120 + "\n", "1.2.0", 5, "\uFEFF" + full120 + " # 5%\n", ""},
		{"CR LF kept at 100", full120 + "\r\n", "1.2.0", 100, full120 + "\r\n", ""},
		{"a leading v", full120 + "\n", "v1.2.0", 10, full120 + " # 10%\n", ""},
		{"fewer numbers", full120 + "\n", "1.2", 10, full120 + " # 10%\n", ""},
		{"four numbers", full120 + "\n", "1.2.0.0", 10, full120 + " # 10%\n", ""},
		{"SemVer pre-release and build", beta + "\n" + full120 + "\n", "1.2.0-beta.2+build.7", 10, beta + " # 10%\n" + full120 + "\n", ""},
		{"a tag in another case", beta + "\n", "1.2.0-BETA2", 10, beta + " # 10%\n", ""},

		{"below 0", full120, "1.2.0", -1, "", "not 0 to 100"},
		{"above 100", full120, "1.2.0", 101, "", "not 0 to 100"},
		{"no version", full120, "", 10, "", "not one a package's name carries"},
		{"not a version", full120, "1.2.0-beta_2", 10, "", "not one a package's name carries"},
		{"a file Parse refuses", full120 + " # comment\n", "1.2.0", 10, "", `a "#" that is not a staged rollout`},
		{"an empty file", "", "1.2.0", 10, "", "no package"},
		{"no package of the version", full110 + "\n" + full120 + "\n", "1.3.0", 10, "", `no package of version "1.3.0"`},
		{"another tag", beta + "\n", "1.2.0-beta3", 10, "", "no package of version"},
		{"a release, not its pre-release", beta + "\n", "1.2.0", 10, "", "no package of version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := squirrel.Stage([]byte(tc.body), tc.version, tc.percent)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %q, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			must(t, err)
			if string(got) != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
			checkStaged(t, got, tc.version, tc.percent)
		})
	}
}

// The regular expressions of Squirrel.Windows' ReleaseEntry.ParseReleaseEntry,
// which reads a line of RELEASES (split on LF). Go's \s, \d and $ (no line
// feed left to end before) read the ASCII lines Stage writes as .NET's do.
var (
	clientEntry   = regexp.MustCompile(`^([0-9a-fA-F]{40})\s+(\S+)\s+(\d+)[\r]*$`)
	clientComment = regexp.MustCompile(`\s*#.*$`)
	clientStaging = regexp.MustCompile(`#\s+(\d{1,3})%$`)
)

// clientRead reads line as Squirrel.Windows does: the package's file (its
// URL or name) and its staged rollout, -1 for none (offered to every
// install).
func clientRead(t testing.TB, line string) (file string, percent int) {
	t.Helper()
	percent = -1
	if m := clientStaging.FindStringSubmatch(line); m != nil {
		percent, _ = strconv.Atoi(m[1])
	}
	m := clientEntry.FindStringSubmatch(clientComment.ReplaceAllString(line, ""))
	if m == nil {
		t.Fatalf("line %q: Squirrel.Windows refuses it", line)
	}
	return m[2], percent
}

// checkStaged checks that Squirrel.Windows reads every package of version
// in body as staged to percent, and Parse likewise.
func checkStaged(t testing.TB, body []byte, version string, percent int) {
	t.Helper()
	r, err := squirrel.Parse(body)
	must(t, err)
	want := -1 // the client's reading of "no rollout"
	if percent < 100 {
		want = percent
	}
	lines := strings.Split(strings.TrimPrefix(string(body), "\uFEFF"), "\n")
	lines = slices.DeleteFunc(lines, func(l string) bool { return strings.Trim(l, " \t\r") == "" })
	entries := r.Entries()
	if len(lines) != len(entries) {
		t.Fatalf("%d lines, %d entries", len(lines), len(entries))
	}
	for i, e := range entries {
		file, got := clientRead(t, lines[i])
		if !strings.HasSuffix(file, e.Name) {
			t.Errorf("line %q: the client reads %q, Parse %q", lines[i], file, e.Name)
		}
		if !strings.Contains(e.Name, "-"+strings.TrimPrefix(versionInName(version), "v")+"-") {
			continue
		}
		if got != want {
			t.Errorf("line %q: the client reads a rollout of %d, want %d", lines[i], got, want)
		}
		if e.Staged != (percent < 100) || e.Staged && e.Percent != percent {
			t.Errorf("line %q: Parse reads staged %v at %d, want %d", lines[i], e.Staged, e.Percent, percent)
		}
	}
}

// versionInName returns how this file's packages spell the test's
// versions.
func versionInName(v string) string {
	switch strings.TrimPrefix(v, "v") {
	case "1.2", "1.2.0.0":
		return "1.2.0"
	case "1.2.0-beta.2+build.7", "1.2.0-BETA2":
		return "1.2.0-beta2"
	}
	return v
}

// FuzzStage feeds Stage any file, version and percentage: it never panics;
// it stages a file Parse accepts that has a package of a version it reads,
// at 0 to 100, and Parse reads the result as the same packages with those
// staged.
func FuzzStage(f *testing.F) {
	f.Add(full120+"\n"+delta120+" # 5%\n", "1.2.0", 10)
	f.Add("\uFEFF"+full110+"\r\n"+full120+"\r\n", "1.1.0", 100)
	f.Add(beta+"\n", "1.2.0-beta.2", 0)
	f.Add(full120+"\n", "1.2", -1)
	f.Fuzz(func(t *testing.T, body, version string, percent int) {
		got, err := squirrel.Stage([]byte(body), version, percent)
		before, parseErr := squirrel.Parse([]byte(body))
		if err != nil {
			expected := strings.Contains(err.Error(), "no package of version") || strings.Contains(err.Error(), "not one a package's name carries")
			if parseErr == nil && percent >= 0 && percent <= 100 && !expected {
				t.Fatalf("Stage of a file Parse accepts: %v", err)
			}
			return
		}
		after, err := squirrel.Parse(got)
		must(t, err)
		b, a := before.Entries(), after.Entries()
		if len(a) != len(b) {
			t.Fatalf("%d entries, want %d", len(a), len(b))
		}
		for i := range a {
			if a[i] == b[i] {
				continue
			}
			want := b[i]
			want.Staged, want.Percent = percent < 100, 0
			if want.Staged {
				want.Percent = percent
			}
			if a[i] != want {
				t.Fatalf("entry %d: got %+v, want %+v", i, a[i], want)
			}
		}
	})
}
