package config_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/release"
)

// app is the release.App key, name, repo, on no channel and without a prefix.
func app(key, name, repo string) release.App { return release.App{Key: key, Name: name, Repo: repo} }

func TestDefaultApps(t *testing.T) {
	// The table of docs/config.md, "The default apps", in its order: key,
	// name, and the repo under storytold/ (the key's unless given).
	var want []release.App
	for _, a := range [][]string{{"photocraft", "PhotoCraft"}, {"vectorcraft", "VectorCraft"}, {"filmcraft", "FilmCraft"},
		{"lightcraft", "LightCraft"}, {"pdfcraft", "PdfCraft"}, {"effectcraft", "EffectCraft"}, {"designcraft", "DesignCraft"},
		{"wordcraft", "WordCraft"}, {"deckcraft", "DeckCraft"}, {"gridcraft", "GridCraft"}, {"cadcraft", "CADCraft"},
		{"soundcraft", "SoundCraft"}, {"artcraft-launcher", "ArtCraft Launcher", "craft-launcher"}} {
		repo := append(a, a[0])[2] // the key unless given
		want = append(want, app(a[0], a[1], "storytold/"+repo))
	}
	got := config.DefaultApps()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DefaultApps():\n got %v\nwant %v", got, want)
	}
	got[0].Key = "changed"
	if again := config.DefaultApps(); again[0].Key != "photocraft" {
		t.Errorf("DefaultApps() after a caller changed its copy: first key %q, want photocraft", again[0].Key)
	}
	// The defaults pass the parser's own rules.
	var list []string
	for _, app := range want {
		list = append(list, app.Key+"="+app.Name+"="+app.Repo)
	}
	if parsed, err := config.ParseApps(strings.Join(list, ",")); err != nil || !reflect.DeepEqual(parsed, want) {
		t.Errorf("ParseApps(defaults written out) = %v, %v; want the defaults", parsed, err)
	}
}

// TestParseApps: a good list gives its apps, an error quotes the entry (each
// key or repo case the part) and gives no apps.
func TestParseApps(t *testing.T) {
	a, b := app("a", "A", "o/a"), app("b", "B", "o/b")
	for _, tc := range []struct {
		name, in string
		want     []release.App
	}{
		{"empty is the defaults", "", config.DefaultApps()},
		{"blank is the defaults", " \t\n", config.DefaultApps()},
		{"one", "photocraft=PhotoCraft=storytold/photocraft", []release.App{app("photocraft", "PhotoCraft", "storytold/photocraft")}},
		{"order kept", "b=B=o/b,a=A=o/a", []release.App{b, a}},
		{"entries and parts trimmed", "  a = Alpha App = org/alpha  ,\tb=B=o/b\n", []release.App{app("a", "Alpha App", "org/alpha"), b}},
		{"key lowercased", "PhotoCraft=PhotoCraft=storytold/photocraft", []release.App{app("photocraft", "PhotoCraft", "storytold/photocraft")}},
		{"key punctuation", "my.app_v2-beta=App=org/app", []release.App{app("my.app_v2-beta", "App", "org/app")}},
		{"repo case kept", "a=A=StoryTold/Photo.Craft_2-x", []release.App{app("a", "A", "StoryTold/Photo.Craft_2-x")}},
		{"name may hold non-ASCII and punctuation", "a=Fotó Craft (β) / 2=o/a", []release.App{app("a", "Fotó Craft (β) / 2", "o/a")}},
		{"trailing comma skipped", "a=A=o/a,", []release.App{a}},
		{"empty entries skipped", ",a=A=o/a,, ,b=B=o/b", []release.App{a, b}},
	} {
		if got, err := config.ParseApps(tc.in); err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: ParseApps(%q) = %v, %v\nwant %v", tc.name, tc.in, got, err, tc.want)
		}
	}
	bad := map[string]string{ // entry → what the error must contain
		"a=A": `entry "a=A"`, "good=G=o/g,photocraft": `entry "photocraft"`, "a=A=o/a=x": `entry "a=A=o/a=x"`,
		"=A=o/a": `entry "=A=o/a": empty key`, "\u212Aelvin=A=o/a": "key",
		"a= =o/a": `entry "a= =o/a": empty name`, "a=A\x01B=o/a": "control character", "a=A\xffB=o/a": "invalid UTF-8",
		"a=A=": `entry "a=A=": repo "" is not org/project`, "a=A=photocraft": `repo "photocraft" is not org/project`,
		" , ,": "no app listed", "a=A=https://github.com/storytold/photocraft": `entry "a=A=https://github.com/storytold/photocraft"`,
		"a=A=o/a,b=B=o/b,a=Again=o/c": `entry "a=Again=o/c": key "a" is already listed`,
		"a=A=o/a,A=Again=o/c":         `entry "A=Again=o/c": key "a" is already listed`,
	}
	for _, key := range []string{"my app", "a:b", "a/b", `a"b`, "photocraftß"} {
		bad[key+"=A=o/a"] = fmt.Sprintf("entry %q: key %q", key+"=A=o/a", key)
	}
	for _, repo := range []string{"/photocraft", "storytold/", "storytold/photo/craft", "story told/photocraft", "storytold/..", "./photocraft", "storytold/photocraft?x"} {
		bad["a=A="+repo] = fmt.Sprintf("entry %q: repo %q", "a=A="+repo, repo)
	}
	for in, want := range bad {
		if got, err := config.ParseApps(in); err == nil || !strings.Contains(err.Error(), want) || got != nil {
			t.Errorf("ParseApps(%q) = %v, %v; want no apps and an error containing %q", in, got, err, want)
		}
	}
}

func FuzzParseApps(f *testing.F) {
	for _, seed := range []string{
		"", " ", "a=A=o/a", "a=A=o/a,b=B=o/b", "A = Alpha = org/alpha ,", "a=A", "a=A=o/a,a=B=o/b",
		"\u212Aelvin=K=o/k", "a=A=o/a/b", "a=A\xff=o/a", ",,,", "my.app_v2-beta=App=org/app",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		apps, err := config.ParseApps(s)
		if err != nil {
			if apps != nil {
				t.Errorf("ParseApps(%q) = %v with error %v, want nil", s, apps, err)
			}
			return
		}
		if len(apps) == 0 {
			t.Fatalf("ParseApps(%q) = no apps and no error", s)
		}
		seen := make(map[string]bool)
		for _, app := range apps {
			if app.Key == "" || strings.Trim(app.Key, "abcdefghijklmnopqrstuvwxyz0123456789._-") != "" {
				t.Errorf("ParseApps(%q): key %q, want [a-z0-9._-]+", s, app.Key)
			}
			if seen[app.Key] {
				t.Errorf("ParseApps(%q): key %q twice", s, app.Key)
			}
			seen[app.Key] = true
			if app.Name == "" || app.Name != strings.TrimSpace(app.Name) || !utf8.ValidString(app.Name) ||
				strings.IndexFunc(app.Name, unicode.IsControl) >= 0 || strings.ContainsAny(app.Name, "=,") {
				t.Errorf("ParseApps(%q): name %q, want non-empty, trimmed, printable UTF-8 without = or ,", s, app.Name)
			}
			org, project, ok := strings.Cut(app.Repo, "/")
			for _, part := range []string{org, project} {
				if !ok || part == "" || part == "." || part == ".." ||
					strings.Trim(part, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
					t.Errorf("ParseApps(%q): repo %q, want org/project", s, app.Repo)
				}
			}
		}
	})
}

// TestWithPrereleases: the listed apps, in any letter case, "*" for all and a
// blank list for none get the channel; a key that is not configured, one
// listed twice, or "*" beside keys is an error naming it; the apps passed in
// are not modified.
func TestWithPrereleases(t *testing.T) {
	apps := config.DefaultApps()
	for _, tt := range []struct {
		list string
		want []string
	}{{"", nil}, {" ", nil}, {"PhotoCraft , artcraft-launcher,", []string{"photocraft", "artcraft-launcher"}}, {" * ", release.Keys(apps)}} {
		got, err := config.WithPrereleases(apps, tt.list)
		var pre []string
		for _, a := range got {
			if a.Prereleases {
				pre = append(pre, a.Key)
			}
		}
		if err != nil || !reflect.DeepEqual(pre, tt.want) {
			t.Errorf("WithPrereleases(%q) marks %q, %v; want %q", tt.list, pre, err, tt.want)
		}
	}
	for list, want := range map[string]string{"photocraft,nosuch": `key "nosuch" is not one of`, "photocraft,PHOTOCRAFT": `key "PHOTOCRAFT" is listed twice`,
		"*,photocraft": "* stands alone", "photocraft,*": "* stands alone", "\u212aelvin": "is not one of"} {
		if _, err := config.WithPrereleases(apps, list); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("WithPrereleases(%q) = %v, want an error containing %q", list, err, want)
		}
	}
	for _, a := range apps {
		if a.Prereleases {
			t.Fatalf("WithPrereleases modified its argument: %+v", a)
		}
	}
}

// TestWithTagPrefixes: each listed app, its key in any letter case, gets its
// prefix and the others none; a blank list gives none; a malformed entry, a
// key not configured or listed twice, and an empty or hostile prefix are
// errors naming the key; the apps passed in are not modified.
func TestWithTagPrefixes(t *testing.T) {
	apps := config.DefaultApps()
	bound := strings.Repeat("p", release.MaxTagPrefix)
	for list, want := range map[string]map[string]string{ // app key → prefix
		" ":                            {},
		"artcraft-launcher=artcraft-v": {"artcraft-launcher": "artcraft-v"},
		" PhotoCraft = photocraft- ,artcraft-launcher=artcraft-v,": {"photocraft": "photocraft-", "artcraft-launcher": "artcraft-v"},
		"photocraft=release/+": {"photocraft": "release/+"},
		"photocraft=" + bound:  {"photocraft": bound},
	} {
		got, err := config.WithTagPrefixes(apps, list)
		prefixes := map[string]string{}
		for _, a := range got {
			if a.TagPrefix != "" {
				prefixes[a.Key] = a.TagPrefix
			}
		}
		if err != nil || !reflect.DeepEqual(prefixes, want) {
			t.Errorf("WithTagPrefixes(%q) gives %q, %v; want %q", list, prefixes, err, want)
		}
	}
	bad := map[string]string{ // list → what the error must contain
		"photocraft": `entry "photocraft": want key=prefix`, "photocraft=p-,nosuch=n-": `key "nosuch" is not one of`,
		"photocraft=p-,PHOTOCRAFT=q-": `key "PHOTOCRAFT" is listed twice`, "photocraft=": `key "photocraft": empty prefix`,
		"photocraft= ": `key "photocraft": empty prefix`, "=p-": `key "" is not one of`, "\u212aelvin=k-": "is not one of",
		"photocraft=a=b": `prefix "a=b" is not`, "photocraft=a b": `prefix "a b" is not`,
	}
	for _, prefix := range []string{"a\tb", "a\x1bb", "a\x7fb", "фото-", "a\u202eb", bound + "p"} { // control, non-ASCII, over the bound
		bad["photocraft="+prefix] = "is not 1 to 32 bytes"
	}
	for _, prefix := range []string{"a..", "a~", ".v", "a//"} { // what git refuses in a tag
		bad["photocraft="+prefix] = "can begin a git tag"
	}
	for list, want := range bad {
		if _, err := config.WithTagPrefixes(apps, list); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("WithTagPrefixes(%q) = %v, want an error containing %q", list, err, want)
		}
	}
	for _, a := range apps {
		if a.TagPrefix != "" {
			t.Fatalf("WithTagPrefixes modified its argument: %+v", a)
		}
	}
}
