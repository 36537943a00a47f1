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
// repository, a path, is refused. A SHA256 in either case, or where one
// side has none, is not.
func TestCheck(t *testing.T) {
	const full = "ArtCraft-0.42.0-full.nupkg"
	lower := strings.ToLower(fullSHA256)
	for _, tc := range []struct {
		name, file, want string // want: a word of the error, "" for none
		github           *asset // the one asset of the release, and sha256 the feed's; nil for assets
		sha256           string
	}{
		{"name of an asset", full, "", nil, ""},
		{"download URL of an asset", url(full), "", nil, ""},
		{"same digest", full, "", &asset{full, 48213377, lower}, fullSHA256},
		{"same digest, lowercase", full, "", &asset{full, 48213377, lower}, lower},
		{"no digest on github", full, "", &asset{full, 48213377, ""}, fullSHA256},
		{"no SHA256 in the feed", full, "", &asset{full, 48213377, lower}, ""},

		{"another size", full, "is 48213378 bytes", &asset{full, 48213378, lower}, fullSHA256},
		{"another digest", full, "SHA256", &asset{full, 48213377, strings.ToLower(deltaSHA256)}, fullSHA256},
		{"no asset of the release", "ArtCraft-0.41.0-full.nupkg", "no asset of v0.42.0", nil, ""},
		{"name in another case", "artcraft-0.42.0-full.nupkg", "no asset of", nil, ""},
		{"name with a query", full + "?x=1", "no asset of", nil, ""},
		{"parent directory", "../" + full, "a path", nil, ""},
		{"dot dot", "..", "a path", nil, ""},
		{"windows path", `..\` + full, "a path", nil, ""},
		{"subdirectory", "packages/" + full, "a path", nil, ""},
		{"absolute path", "/" + full, "a path", nil, ""},
		{"another host", "https://example.com/storytold/artcraft/releases/download/v0.42.0/" + full, "https://github.com", nil, ""},
		{"a subdomain", "https://objects.github.com/storytold/artcraft/releases/download/v0.42.0/" + full, "https://github.com", nil, ""},
		{"user info", "https://github.com@example.com/storytold/artcraft/releases/download/v0.42.0/" + full, "https://github.com", nil, ""},
		{"plain http", "http://github.com/storytold/artcraft/releases/download/v0.42.0/" + full, "https://github.com", nil, ""},
		{"scheme-relative", "//github.com/storytold/artcraft/releases/download/v0.42.0/" + full, "https://github.com", nil, ""},
		{"another scheme", "file:///etc/passwd", "https://github.com", nil, ""},
		{"another repository", "https://github.com/storytold/photocraft/releases/download/v0.42.0/" + full, "outside the release's repository", nil, ""},
		{"another organisation", "https://github.com/evil/artcraft/releases/download/v0.42.0/" + full, "outside the release's repository", nil, ""},
		{"a prefix of the repository", "https://github.com/storytold/artcraft-evil/releases/download/v0.42.0/" + full, "outside the release's repository", nil, ""},
		{"out of the repository by dot segments", "https://github.com/storytold/artcraft/releases/download/../../../evil/x/releases/download/v0.42.0/" + full, "no asset of v0.42.0", nil, ""},
		{"another release", "https://github.com/storytold/artcraft/releases/download/v0.41.0/" + full, "no asset of v0.42.0", nil, ""},
		{"a query", url(full) + "?raw=1", "no asset of", nil, ""},
		{"a fragment", url(full) + "#x", "no asset of", nil, ""},
		{"escaped otherwise", strings.Replace(url(full), "ArtCraft", "Art%43raft", 1), "no asset of", nil, ""},
	} {
		f, rel := feedOf(tc.file), newRelease(assets)
		if tc.github != nil {
			f.Assets[0].SHA256, rel = tc.sha256, newRelease([]asset{*tc.github})
		}
		err := velopack.Check(f, rel)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Check: %v, want an error about %q", tc.name, err, tc.want)
		}
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
// but for each FileName's value, which is the package's download URL (a
// value written with escapes replaced whole, the URL written as a JSON
// string); it reads as the same feed with absolute names.
func TestAbsolute(t *testing.T) {
	const escaped = "Art&Craft's +beta-0.42.0-full.nupkg"
	for _, tc := range []struct {
		name string
		body []byte
		rel  *release.Release
		// names are the FileName values as the file writes them, and the
		// download URLs that replace them.
		names [][2]string
	}{
		{"releases.win.json", readFile(t, "testdata/releases.win.json"), newRelease(assets), [][2]string{
			{`"FileName": "ArtCraft-0.42.0-full.nupkg"`, `"FileName": "` + url("ArtCraft-0.42.0-full.nupkg") + `"`},
			{`"FileName": "ArtCraft-0.42.0-delta.nupkg"`, `"FileName": "` + url("ArtCraft-0.42.0-delta.nupkg") + `"`},
		}},
		{"releases.linux.json", readFile(t, "testdata/releases.linux.json"), newRelease(assets), [][2]string{
			{`"FileName":"ArtCraft-0.42.0-linux-delta.nupkg"`, `"FileName":"` + url("ArtCraft-0.42.0-linux-delta.nupkg") + `"`},
		}},
		{"escapes", []byte(with(`"ArtCraft-0.42.0-full.nupkg"`, `"Art\u0026Craft\u0027s \u002Bbeta\u002d0.42.0-full.nupkg"`)), newRelease([]asset{{escaped, 48213377, ""}}), [][2]string{
			{`"Art\u0026Craft\u0027s \u002Bbeta\u002d0.42.0-full.nupkg"`, `"` + url(escaped) + `"`},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := velopack.Parse(tc.body)
			must(t, err)
			got, err := velopack.Absolute(tc.body, f, tc.rel)
			must(t, err)
			want := string(tc.body)
			for _, n := range tc.names {
				if strings.Count(want, n[0]) != 1 {
					t.Fatalf("%s is not once in the body", n[0])
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
		must(t, err)
		if w := absolute(feed); !slices.Equal(g.Assets, w.Assets) {
			t.Fatalf("Parse of Absolute's output:\n%+v\nwant\n%+v", g.Assets, w.Assets)
		}
		again, err := velopack.Absolute(out, g, rel)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("Absolute of its own output = %s, %v; want it unchanged", again, err)
		}
	})
}
