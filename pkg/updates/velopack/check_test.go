package velopack_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/velopack"
)

// feedOf returns a feed of one full package of the release named name,
// with its size and hashes.
func feedOf(name string) velopack.Feed {
	return velopack.Feed{Assets: []velopack.Asset{{
		PackageID: "ArtCraft", Version: "0.42.0", Type: velopack.TypeFull, FileName: name,
		SHA1: fullSHA1, SHA256: fullSHA256, Size: 48213377,
	}}}
}

// TestCheck: a feed may be served for a release when every package it
// names is an asset of the release, by name or by download URL, of the
// size and digest GitHub has for it; any other name, another host or
// repository, a path, is refused.
func TestCheck(t *testing.T) {
	const full = "ArtCraft-0.42.0-full.nupkg"
	rel := newRelease(assets)
	for _, tc := range []struct {
		name, file, want string // want: a word of the error, "" for none
	}{
		{"name of an asset", full, ""},
		{"download URL of an asset", url(full), ""},

		{"no asset of the release", "ArtCraft-0.41.0-full.nupkg", "no asset of v0.42.0"},
		{"name in another case", "artcraft-0.42.0-full.nupkg", "no asset of"},
		{"name with a query", full + "?x=1", "no asset of"},
		{"parent directory", "../" + full, "a path"},
		{"dot dot", "..", "a path"},
		{"windows path", `..\` + full, "a path"},
		{"subdirectory", "packages/" + full, "a path"},
		{"absolute path", "/" + full, "a path"},
		{"another host", "https://example.com/storytold/artcraft/releases/download/v0.42.0/" + full, "https://github.com"},
		{"a subdomain", "https://objects.github.com/storytold/artcraft/releases/download/v0.42.0/" + full, "https://github.com"},
		{"user info", "https://github.com@example.com/storytold/artcraft/releases/download/v0.42.0/" + full, "https://github.com"},
		{"plain http", "http://github.com/storytold/artcraft/releases/download/v0.42.0/" + full, "https://github.com"},
		{"scheme-relative", "//github.com/storytold/artcraft/releases/download/v0.42.0/" + full, "https://github.com"},
		{"another scheme", "file:///etc/passwd", "https://github.com"},
		{"another repository", "https://github.com/storytold/photocraft/releases/download/v0.42.0/" + full, "outside the release's repository"},
		{"another organisation", "https://github.com/evil/artcraft/releases/download/v0.42.0/" + full, "outside the release's repository"},
		{"a prefix of the repository", "https://github.com/storytold/artcraft-evil/releases/download/v0.42.0/" + full, "outside the release's repository"},
		{"out of the repository by dot segments", "https://github.com/storytold/artcraft/releases/download/../../../evil/x/releases/download/v0.42.0/" + full, "no asset of v0.42.0"},
		{"another release", "https://github.com/storytold/artcraft/releases/download/v0.41.0/" + full, "no asset of v0.42.0"},
		{"a query", url(full) + "?raw=1", "no asset of"},
		{"a fragment", url(full) + "#x", "no asset of"},
		{"escaped otherwise", strings.Replace(url(full), "ArtCraft", "Art%43raft", 1), "no asset of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, velopack.Check(feedOf(tc.file), rel), tc.want)
		})
	}
}

// wantErr fails t unless err is nil for want "", or else says want.
func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("Check: %v, want nil", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("Check: %v, want an error about %q", err, want)
	}
}

// TestCheckAgrees: a package whose size or SHA256 is not what GitHub has
// for its asset is refused; a SHA256 in either case, or where one side has
// none, is not.
func TestCheckAgrees(t *testing.T) {
	const full = "ArtCraft-0.42.0-full.nupkg"
	for _, tc := range []struct {
		name   string
		asset  asset
		sha256 string // the feed's
		want   string
	}{
		{"same", asset{full, 48213377, strings.ToLower(fullSHA256)}, fullSHA256, ""},
		{"same, lowercase", asset{full, 48213377, strings.ToLower(fullSHA256)}, strings.ToLower(fullSHA256), ""},
		{"no digest on github", asset{full, 48213377, ""}, fullSHA256, ""},
		{"no SHA256 in the feed", asset{full, 48213377, strings.ToLower(fullSHA256)}, "", ""},
		{"another size", asset{full, 48213378, strings.ToLower(fullSHA256)}, fullSHA256, "is 48213378 bytes"},
		{"another digest", asset{full, 48213377, strings.ToLower(deltaSHA256)}, fullSHA256, "SHA256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := feedOf(full)
			f.Assets[0].SHA256 = tc.sha256
			wantErr(t, velopack.Check(f, newRelease([]asset{tc.asset})), tc.want)
		})
	}
	if err := velopack.Check(feedOf(full), nil); err == nil {
		t.Error("Check of no release = nil, want an error")
	}
	if err := velopack.Check(velopack.Feed{}, newRelease(nil)); err != nil {
		t.Errorf("Check of an empty feed: %v", err)
	}
	bad := velopack.Feed{Assets: append(feedOf(full).Assets, feedOf("ArtCraft-0.41.0-full.nupkg").Assets...)}
	if err := velopack.Check(bad, newRelease(assets)); err == nil || !strings.HasPrefix(err.Error(), "asset 1:") {
		t.Errorf("Check of a feed whose second package is no asset: %v, want an error about asset 1", err)
	}
}

// absolute returns f with every FileName the download URL of the asset of
// rel it names.
func absolute(f velopack.Feed) velopack.Feed {
	g := velopack.Feed{Assets: slices.Clone(f.Assets)}
	for i, a := range g.Assets {
		if !strings.Contains(a.FileName, "/") {
			g.Assets[i].FileName = url(a.FileName)
		}
	}
	return g
}

// TestAbsolute: the served feed is the publisher's file, byte for byte,
// but for each FileName's value, which is the package's download URL; it
// reads as the same feed with absolute names.
func TestAbsolute(t *testing.T) {
	rel := newRelease(assets)
	for _, tc := range []struct {
		file string
		// names are the FileName values as the file writes them, and the
		// download URLs that replace them.
		names [][2]string
	}{
		{"testdata/releases.win.json", [][2]string{
			{`"FileName": "ArtCraft-0.42.0-full.nupkg"`, `"FileName": "` + url("ArtCraft-0.42.0-full.nupkg") + `"`},
			{`"FileName": "ArtCraft-0.42.0-delta.nupkg"`, `"FileName": "` + url("ArtCraft-0.42.0-delta.nupkg") + `"`},
		}},
		{"testdata/releases.linux.json", [][2]string{
			{`"FileName":"ArtCraft-0.42.0-linux-delta.nupkg"`, `"FileName":"` + url("ArtCraft-0.42.0-linux-delta.nupkg") + `"`},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			body := readFile(t, tc.file)
			f, err := velopack.Parse(body)
			must(t, err)
			got, err := velopack.Absolute(body, f, rel)
			must(t, err)
			want := string(body)
			for _, n := range tc.names {
				if strings.Count(want, n[0]) != 1 {
					t.Fatalf("%s is not once in %s", n[0], tc.file)
				}
				want = strings.Replace(want, n[0], n[1], 1)
			}
			if string(got) != want {
				t.Errorf("Absolute:\n%s\nwant\n%s", got, want)
			}
			g, err := velopack.Parse(got)
			must(t, err)
			if w := absolute(f); !slices.Equal(g.Assets, w.Assets) {
				t.Errorf("Parse of Absolute's output:\n%+v\nwant\n%+v", g.Assets, w.Assets)
			}
		})
	}
}

// TestAbsoluteEscapes: a FileName written with escapes is replaced whole,
// its value as the decoder read it, and the URL written as a JSON string.
func TestAbsoluteEscapes(t *testing.T) {
	name := "Art&Craft's +beta-0.42.0-full.nupkg"
	body := with(`"ArtCraft-0.42.0-full.nupkg"`, `"Art\u0026Craft\u0027s \u002Bbeta\u002d0.42.0-full.nupkg"`)
	f, err := velopack.Parse([]byte(body))
	must(t, err)
	got, err := velopack.Absolute([]byte(body), f, newRelease([]asset{{name, 48213377, ""}}))
	must(t, err)
	if want := with(`"ArtCraft-0.42.0-full.nupkg"`, `"`+url(name)+`"`); string(got) != want {
		t.Errorf("Absolute:\n%s\nwant\n%s", got, want)
	}
}

// TestAbsoluteRefuses: Absolute refuses a feed it may not serve (Check), a
// Feed that is not the file's, and a result over MaxFeed.
func TestAbsoluteRefuses(t *testing.T) {
	rel := newRelease(assets)
	body := []byte(base)
	f, err := velopack.Parse(body)
	must(t, err)
	other := velopack.Feed{Assets: slices.Clone(f.Assets)}
	other.Assets[0].Version = "0.43.0"
	big := []byte(with(`"hi"`, `"`+strings.Repeat("a", velopack.MaxFeed-len(base))+`"`))
	bigFeed, err := velopack.Parse(big)
	must(t, err)
	for _, tc := range []struct {
		name string
		body []byte
		f    velopack.Feed
		rel  *release.Release
		want string
	}{
		{"no asset", body, f, newRelease(assets[1:]), "no asset of"},
		{"no release", body, f, nil, "no release"},
		{"another feed", body, other, rel, "not the file's"},
		{"no feed", body, velopack.Feed{}, rel, "not the file's"},
		{"not a feed", []byte("{}"), velopack.Feed{}, rel, `no "Assets"`},
		{"over MaxFeed once absolute", big, bigFeed, rel, "over"},
	} {
		got, err := velopack.Absolute(tc.body, tc.f, tc.rel)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Absolute = %.60q, %v; want an error about %q", tc.name, got, err, tc.want)
		}
	}
}

// FuzzParse: Parse never panics; a feed it accepts, served for a release
// that has its packages, reads back as the same feed with absolute names,
// and serving it again changes nothing.
func FuzzParse(f *testing.F) {
	for _, fx := range fixtures {
		f.Add(readFile(f, fx.file))
	}
	f.Add([]byte(base))
	for _, tc := range refused {
		if len(tc.body) < 4096 {
			f.Add([]byte(tc.body))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		feed, err := velopack.Parse(body)
		if err != nil {
			return
		}
		var has []asset
		for _, a := range feed.Assets {
			if release.GoodAssetName(a.FileName) && !slices.ContainsFunc(has, func(x asset) bool { return x.name == a.FileName }) {
				has = append(has, asset{a.FileName, a.Size, ""})
			}
		}
		rel := newRelease(has)
		if velopack.Check(feed, rel) != nil {
			return
		}
		out, err := velopack.Absolute(body, feed, rel)
		if err != nil {
			if len(body) > velopack.MaxFeed-len(feed.Assets)*200 {
				return // over MaxFeed once absolute, maybe
			}
			t.Fatalf("Absolute of a feed that Check accepts: %v", err)
		}
		g, err := velopack.Parse(out)
		if err != nil {
			t.Fatalf("Parse of Absolute's output: %v\n%s", err, out)
		}
		if w := absolute(feed); !slices.Equal(g.Assets, w.Assets) {
			t.Fatalf("Parse of Absolute's output:\n%+v\nwant\n%+v", g.Assets, w.Assets)
		}
		again, err := velopack.Absolute(out, g, rel)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("Absolute of its own output = %s, %v; want it unchanged", again, err)
		}
	})
}
