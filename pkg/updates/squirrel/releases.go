package squirrel

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/storytold/craft-releases/pkg/release"
)

// Entry is one package a RELEASES file lists: one line.
type Entry struct {
	SHA1  string // 40 hex digits, as written (either case): the publisher's hash of the package
	Name  string // the package's file name: the line's, or the last segment of its URL
	URL   string // the line's absolute URL, as written; "" when the line gives a file name
	Size  int64  // the package's size in bytes, 1 to release.MaxSizeBytes
	Delta bool   // Name ends in "-delta.nupkg": a delta package
	// Staged reports that the line ends in a staged rollout, "# NN%":
	// Squirrel.Windows offers the package to Percent percent of installs
	// (0 to 100), picked by a random id each install keeps.
	Staged  bool
	Percent int
}

// Releases is a RELEASES file as Parse read it: its entries, in the file's
// order. Only Parse makes one; the zero Releases lists nothing.
type Releases struct {
	entries []Entry
	lines   []int // the line of each entry, from 1
}

// Entries returns r's entries, in the file's order.
func (r Releases) Entries() []Entry { return slices.Clone(r.entries) }

// Parse reads body as Squirrel.Windows reads a RELEASES file
// (ReleaseEntry.ParseReleaseFile), and refuses what its client would
// refuse or might read otherwise than its writer meant. The file is at
// most MaxReleases bytes of UTF-8, an optional byte order mark first, one
// line per package, lines ending in LF or CR LF; a line of spaces and tabs
// only is skipped. Every other line is exactly
//
//	<SHA1> <file> <size>[ # <NN>%]
//
// separated by spaces or tabs, with none before or after: SHA1 is 40 hex
// digits; file is a package's file name or an absolute URL on
// https://github.com whose last segment, unescaped, is one; size is 1 to
// release.MaxSizeBytes, in digits without a leading zero; NN, the staged
// rollout, is 0 to 100, likewise. A package's file name is a
// release.GoodAssetName ending in ".nupkg" (a delta ends in
// "-delta.nupkg") with the version the client reads before that:
// "<id>-<version>[-full|-delta].nupkg", version 2 to 4 numbers of up to 9
// digits separated by "." and optionally "-" and a tag that starts with
// an ASCII letter and holds only ASCII letters, digits and "-"
// (App-1.2.0-full.nupkg, App-1.2.0-beta2-delta.nupkg). No package may be
// listed twice, and at least one must be.
//
// Refused although the client takes them: a character that is neither
// printable nor a tab (a control, format or bidirectional character, a
// space other than U+0020, NUL), a CR anywhere but at a line's end, a
// comment other than the staged rollout (the client drops it, and with it
// whatever it hid), a staged rollout on a line ending in CR (the client
// does not see it there, and offers the package to everyone), a "#" not
// set apart by white space, a number with a leading zero, a package listed
// twice, an http URL or one on another host, and a "-delta.nupkg" in other
// letter case (the client's delta and version rules then disagree). The
// error names the first offending line and says why.
func Parse(body []byte) (Releases, error) {
	if len(body) > MaxReleases {
		return Releases{}, fmt.Errorf("%d bytes: over %d", len(body), MaxReleases)
	}
	text := strings.TrimPrefix(string(body), "\uFEFF")
	var r Releases
	lineOf := map[string]int{}
	n := 0
	for line := range strings.SplitSeq(text, "\n") {
		n++
		e, ok, err := parseLine(line)
		if err != nil {
			return Releases{}, fmt.Errorf("line %d: %w", n, err)
		}
		if !ok {
			continue
		}
		if m, dup := lineOf[e.Name]; dup {
			return Releases{}, fmt.Errorf("line %d: %s is already on line %d", n, e.Name, m)
		}
		lineOf[e.Name] = n
		r.entries = append(r.entries, e)
		r.lines = append(r.lines, n)
	}
	if len(r.entries) == 0 {
		return Releases{}, errors.New("no package: Squirrel.Windows refuses an empty RELEASES")
	}
	return r, nil
}

// parseLine reads one line of a RELEASES file, without its LF: ok is false
// for a blank line.
func parseLine(line string) (e Entry, ok bool, err error) {
	body, cr := strings.CutSuffix(line, "\r")
	if !utf8.ValidString(body) {
		return Entry{}, false, errors.New("not UTF-8")
	}
	if i := strings.IndexFunc(body, func(r rune) bool { return r != '\t' && !unicode.IsPrint(r) }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(body[i:])
		return Entry{}, false, fmt.Errorf("character %U: neither printable nor a tab", r)
	}
	fields := strings.FieldsFunc(body, isSpace)
	switch {
	case len(fields) == 0:
		return Entry{}, false, nil
	case isSpace(rune(body[0])):
		return Entry{}, false, errors.New("white space before the SHA1")
	case isSpace(rune(body[len(body)-1])):
		return Entry{}, false, errors.New("white space at the end")
	}
	if len(fields) == 5 && fields[3] == "#" && strings.HasSuffix(fields[4], "%") {
		if cr {
			return Entry{}, false, errors.New(`a staged rollout "# NN%" before a CR: Squirrel.Windows would not read it`)
		}
		e.Staged = true
		if e.Percent, ok = number(strings.TrimSuffix(fields[4], "%"), 100); !ok {
			return Entry{}, false, fmt.Errorf("staged rollout %s: not 0 to 100%%", excerpt(fields[4]))
		}
		fields = fields[:3]
	}
	if slices.ContainsFunc(fields, func(f string) bool { return strings.Contains(f, "#") }) {
		return Entry{}, false, errors.New(`a "#" that is not a staged rollout "# NN%"`)
	}
	if len(fields) != 3 {
		return Entry{}, false, fmt.Errorf(`%d fields: want "<SHA1> <file> <size>", then optionally "# NN%%"`, len(fields))
	}
	if e.SHA1 = fields[0]; len(e.SHA1) != 40 || strings.Trim(e.SHA1, "0123456789abcdefABCDEF") != "" {
		return Entry{}, false, fmt.Errorf("SHA1 %s: not 40 hex digits", excerpt(e.SHA1))
	}
	if e.Name, e.URL, err = parseFile(fields[1]); err != nil {
		return Entry{}, false, err
	}
	e.Delta = strings.HasSuffix(e.Name, "-delta.nupkg")
	size, ok := number(fields[2], release.MaxSizeBytes)
	if !ok || size == 0 {
		return Entry{}, false, fmt.Errorf("size %s: not 1 to %d bytes", excerpt(fields[2]), int64(release.MaxSizeBytes))
	}
	e.Size = int64(size)
	return e, true, nil
}

// isSpace reports whether r separates the fields of a line.
func isSpace(r rune) bool { return r == ' ' || r == '\t' }

// number reads s as a whole number of at most limit, written in ASCII
// digits without a leading zero.
func number(s string, limit uint64) (int, bool) {
	if s == "" || len(s) > 16 || s != "0" && s[0] == '0' || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > limit {
		return 0, false
	}
	return int(n), true
}

// githubPrefix starts every URL a RELEASES file may give.
const githubPrefix = "https://github.com/"

// parseFile reads the file field of a line: a package's file name, or an
// absolute URL on GitHub whose last segment is one.
func parseFile(f string) (name, rawURL string, err error) {
	name = f
	if scheme, _, ok := strings.Cut(f, "://"); ok && (strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https")) {
		rest, ok := strings.CutPrefix(f, githubPrefix)
		if !ok {
			return "", "", fmt.Errorf("URL %s: not on %s", excerpt(f), githubPrefix)
		}
		if name, err = url.PathUnescape(rest[strings.LastIndexByte(rest, '/')+1:]); err != nil {
			return "", "", fmt.Errorf("URL %s: %w", excerpt(f), err)
		}
		rawURL = f
	}
	if err := checkPackage(name); err != nil {
		return "", "", err
	}
	return name, rawURL, nil
}

// checkPackage reports why name is not the file name of a package that
// Squirrel.Windows reads (see Parse), or nil when it is one.
func checkPackage(name string) error {
	if !release.GoodAssetName(name) {
		return fmt.Errorf("file %s: not a file name", excerpt(name))
	}
	if !strings.HasSuffix(name, ".nupkg") {
		return fmt.Errorf("file %s: not a .nupkg", excerpt(name))
	}
	// The client tells a delta by its suffix in any letter case, but
	// reads the version only past a lowercase one.
	lower := strings.ToLower(name)
	if strings.HasSuffix(lower, "-delta.nupkg") && !strings.HasSuffix(name, "-delta.nupkg") {
		return fmt.Errorf(`file %s: write "-delta.nupkg" in lowercase`, excerpt(name))
	}
	if _, ok := packageVersion(name); !ok {
		return fmt.Errorf("file %s: no version Squirrel.Windows reads, as in App-1.2.0-full.nupkg", excerpt(name))
	}
	return nil
}

// packageVersion returns the version Squirrel.Windows reads in name, the
// file name of a package (checkPackage): the leftmost one that runs to the
// end, before "-full" or "-delta".
func packageVersion(name string) (string, bool) {
	base, ok := strings.CutSuffix(name, ".nupkg")
	if !ok {
		return "", false
	}
	if b, ok := strings.CutSuffix(base, "-delta"); ok {
		base = b
	} else {
		base = strings.TrimSuffix(base, "-full")
	}
	// The client takes the leftmost version that runs to the end; one of
	// at least two numbers can start at no "-" before the one found here.
	for i := 1; i < len(base)-1; i++ {
		if base[i] == '-' && nugetVersion(base[i+1:]) {
			return base[i+1:], true
		}
	}
	return "", false
}

// nugetVersion reports whether s is a version Squirrel.Windows reads from
// a package's file name and NuGet then parses: 2 to 4 numbers of 1 to 9
// digits separated by ".", then optionally "-" and a tag of ASCII letters,
// digits and "-" that starts with a letter.
func nugetVersion(s string) bool {
	nums, tag, hasTag := strings.Cut(s, "-")
	parts := strings.Split(nums, ".")
	if len(parts) < 2 || len(parts) > 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 9 || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	if !hasTag {
		return true
	}
	if tag == "" || !asciiLetter(tag[0]) {
		return false
	}
	return !strings.ContainsFunc(tag, func(r rune) bool {
		return r != '-' && (r > unicode.MaxASCII || !asciiLetter(byte(r)) && (r < '0' || r > '9'))
	})
}

func asciiLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// Check reports why r may not be served for the release rel, or nil when
// it may: each entry names an asset of rel (exactly, letter case included)
// of the entry's size, and an entry that gives a URL gives exactly that
// asset's download URL; every such URL is one of rel's repository (the one
// rel's page is in) and tag (release.DownloadRepo). So a RELEASES file can
// only point at packages the release carries: a URL to another host,
// repository or release, or a package the release lacks (one of an older
// release, which a file that keeps a history lists), is refused. The error
// names the line.
func (r Releases) Check(rel *release.Release) error {
	if rel == nil {
		return errors.New("no release")
	}
	if len(r.entries) == 0 {
		return errors.New("no package")
	}
	repo, ok := release.PageRepo(rel.HTMLURL, rel.Tag)
	if !ok {
		return fmt.Errorf("release %s: no page on GitHub", rel.Tag)
	}
	for i, e := range r.entries {
		a, ok := rel.Asset(e.Name)
		switch {
		case !ok:
			return fmt.Errorf("line %d: %s is not an asset of release %s", r.lines[i], e.Name, rel.Tag)
		case e.URL != "" && e.URL != a.DownloadURL:
			return fmt.Errorf("line %d: URL %s: not the download URL of %s in release %s", r.lines[i], excerpt(e.URL), e.Name, rel.Tag)
		case e.Size != a.SizeBytes:
			return fmt.Errorf("line %d: size %d, but asset %s has %d bytes", r.lines[i], e.Size, e.Name, a.SizeBytes)
		}
		if got, ok := release.DownloadRepo(a.DownloadURL, rel.Tag, a.Name); !ok || got != repo {
			return fmt.Errorf("asset %s: download URL not in release %s of %s", a.Name, rel.Tag, repo)
		}
	}
	return nil
}

// Absolute returns r as the feed serves it for the release rel, once Check
// accepts it (else Check's error): one line per entry, in r's order,
// "<SHA1> <URL> <size>" and " # <NN>%" for a staged rollout, where URL is
// the download URL of the entry's asset of rel. The SHA1 is as written;
// every line, a delta's included, points at GitHub; lines end in LF, with
// no byte order mark, which Squirrel.Windows reads as it reads CR LF (it
// splits on LF and drops a CR at a line's end). Parse reads the result
// back to the same entries, each with its URL.
func (r Releases) Absolute(rel *release.Release) ([]byte, error) {
	if err := r.Check(rel); err != nil {
		return nil, err
	}
	var b []byte
	for _, e := range r.entries {
		b = append(b, e.SHA1...)
		b = append(b, ' ')
		a, _ := rel.Asset(e.Name)
		b = append(b, a.DownloadURL...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.Size, 10)
		if e.Staged {
			b = append(b, " # "...)
			b = strconv.AppendInt(b, int64(e.Percent), 10)
			b = append(b, '%')
		}
		b = append(b, '\n')
	}
	return b, nil
}
