package electron_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/electron"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	file := func(u string) electron.File {
		return electron.File{Version: "1.4.0", Files: []electron.Download{{URL: u, SHA512: shaSetup}}}
	}
	const name = "Craft-Setup-1.4.0.exe"
	for _, tc := range []struct {
		name string
		f    electron.File
		err  string // "" for none
	}{
		{"an asset's name", file(name), ""},
		{"an asset's download URL", file(url(name)), ""},
		{"a legacy path and packages of assets", electron.File{Version: "1.4.0", Path: name, SHA512: shaSetup, Packages: []electron.Package{{Arch: "x64", Path: url("craft-1.4.0-x64.nsis.7z")}, {Arch: "arm64", Path: "craft-1.4.0-arm64.nsis.7z"}}}, ""},

		{"a file the release does not carry", file("Craft-Setup-1.3.0.exe"), `files[0].url "Craft-Setup-1.3.0.exe": neither an asset of v1.4.0`},
		{"a name in another case", file("craft-setup-1.4.0.exe"), "files[0].url"},
		{"a name escaped", file("Craft%2DSetup-1.4.0.exe"), "files[0].url"},
		{"a relative path up", file("../v1.3.0/" + name), "files[0].url"},
		{"a path into a directory", file("v1.4.0/" + name), "files[0].url"},
		{"another host", file("https://downloads.example/" + name), "files[0].url"},
		{"a host-relative URL", file("//downloads.example/" + name), "files[0].url"},
		{"http", file(strings.Replace(url(name), "https:", "http:", 1)), "files[0].url"},
		{"another repository", file(release.DownloadURL("storytold/other", tag, name)), "files[0].url"},
		{"another release", file(release.DownloadURL(repo, "v1.3.0", name)), "files[0].url"},
		{"out of the release with ..", file("https://github.com/" + repo + "/releases/download/" + tag + "/../v1.3.0/" + name), "files[0].url"},
		{"a query", file(url(name) + "?x=1"), "files[0].url"},
		{"a second file bad", electron.File{Version: "1.4.0", Files: []electron.Download{{URL: name}, {URL: "evil.exe"}}}, `files[1].url "evil.exe"`},
		{"a legacy path bad", electron.File{Version: "1.4.0", Files: []electron.Download{{URL: name}}, Path: "evil.exe"}, `path "evil.exe"`},
		{"a package bad", electron.File{Version: "1.4.0", Path: name, Packages: []electron.Package{{Arch: "x64", Path: "evil.7z"}}}, `packages.x64.path "evil.7z"`},
	} {
		err := electron.Check(tc.f, craft())
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: Check: got %v, want %q", tc.name, err, tc.err)
		}
	}
	if err := electron.Check(file(name), nil); err == nil {
		t.Error("Check with no release: got nil, want an error")
	}
}

// relative calls fn on each download of a copy of f named by its asset's
// name (its files' URLs, its packages' paths, its legacy path), and returns
// the copy.
func relative(f electron.File, fn func(name *string)) electron.File {
	f.Files, f.Packages = slices.Clone(f.Files), slices.Clone(f.Packages)
	var all []*string
	for i := range f.Files {
		all = append(all, &f.Files[i].URL)
	}
	for i := range f.Packages {
		all = append(all, &f.Packages[i].Path)
	}
	for _, u := range append(all, &f.Path) {
		if *u != "" && !strings.Contains(*u, "://") {
			fn(u)
		}
	}
	return f
}

// absolute returns f with each download made its asset's URL.
func absolute(f electron.File) electron.File {
	return relative(f, func(name *string) { *name = url(*name) })
}

// served is tc.served, or body with each relative download at the end of
// a line made absolute.
func served(body, want string) string {
	if want != "" {
		return want
	}
	var pairs []string
	for _, name := range assets {
		for _, eol := range []string{"\n", "\r\n"} {
			pairs = append(pairs, ": "+name+eol, ": "+url(name)+eol)
		}
	}
	return strings.NewReplacer(pairs...).Replace(body)
}

func TestAbsolute(t *testing.T) {
	t.Parallel()
	for _, tc := range valid {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := fill(tc.body)
			got, err := electron.Absolute([]byte(body), craft())
			must(t, err)
			if want := fill(served(tc.body, tc.served)); string(got) != want {
				t.Errorf("Absolute:\ngot\n%s\nwant\n%s", got, want)
			}
			f, err := electron.Parse(got)
			must(t, err)
			if want := absolute(tc.want); !reflect.DeepEqual(f, want) {
				t.Errorf("Parse of what Absolute served:\ngot  %+v\nwant %+v", f, want)
			}
			again, err := electron.Absolute(got, craft())
			if err != nil || string(again) != string(got) {
				t.Errorf("Absolute of what Absolute served: got %v, want it unchanged", err)
			}
		})
	}
}

func TestAbsoluteRefuses(t *testing.T) {
	t.Parallel()
	body := fill(one)
	for _, tc := range []struct {
		name string
		body string
		rel  *release.Release
		err  string
	}{
		{"a file Parse refuses", strings.Replace(body, "1.4.0", "1.4", 1), craft(), "not a version"},
		{"oversized", body + "x: '" + strings.Repeat("x", electron.MaxFile) + "'\n", craft(), "larger than"},
		{"a file Check refuses", strings.Replace(body, "Craft-Setup-1.4.0.exe", "https://downloads.example/Craft-Setup-1.4.0.exe", 1), craft(), "files[0].url"},
		{"no release", body, nil, "no release"},
	} {
		got, err := electron.Absolute([]byte(tc.body), tc.rel)
		if err == nil || !strings.Contains(err.Error(), tc.err) || got != nil {
			t.Errorf("%s: Absolute: got %q, %v; want an error with %q", tc.name, got, err, tc.err)
		}
	}
}
