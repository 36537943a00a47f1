package config_test

import (
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/release"
)

func TestDefaultApps(t *testing.T) {
	// The table of docs/config.md, "The default apps", in its order.
	want := []release.App{
		{Key: "photocraft", Name: "PhotoCraft", Repo: "storytold/photocraft"},
		{Key: "vectorcraft", Name: "VectorCraft", Repo: "storytold/vectorcraft"},
		{Key: "filmcraft", Name: "FilmCraft", Repo: "storytold/filmcraft"},
		{Key: "lightcraft", Name: "LightCraft", Repo: "storytold/lightcraft"},
		{Key: "pdfcraft", Name: "PdfCraft", Repo: "storytold/pdfcraft"},
		{Key: "effectcraft", Name: "EffectCraft", Repo: "storytold/effectcraft"},
		{Key: "designcraft", Name: "DesignCraft", Repo: "storytold/designcraft"},
		{Key: "wordcraft", Name: "WordCraft", Repo: "storytold/wordcraft"},
		{Key: "deckcraft", Name: "DeckCraft", Repo: "storytold/deckcraft"},
		{Key: "gridcraft", Name: "GridCraft", Repo: "storytold/gridcraft"},
		{Key: "cadcraft", Name: "CADCraft", Repo: "storytold/cadcraft"},
		{Key: "soundcraft", Name: "SoundCraft", Repo: "storytold/soundcraft"},
		{Key: "artcraft-launcher", Name: "ArtCraft Launcher", Repo: "storytold/craft-launcher"},
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

func TestParseApps(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []release.App
	}{
		{"empty is the defaults", "", config.DefaultApps()},
		{"blank is the defaults", " \t\n", config.DefaultApps()},
		{"one", "photocraft=PhotoCraft=storytold/photocraft",
			[]release.App{{Key: "photocraft", Name: "PhotoCraft", Repo: "storytold/photocraft"}}},
		{"order kept", "b=B=o/b,a=A=o/a",
			[]release.App{{Key: "b", Name: "B", Repo: "o/b"}, {Key: "a", Name: "A", Repo: "o/a"}}},
		{"entries and parts trimmed", "  a = Alpha App = org/alpha  ,\tb=B=org/b\n",
			[]release.App{{Key: "a", Name: "Alpha App", Repo: "org/alpha"}, {Key: "b", Name: "B", Repo: "org/b"}}},
		{"key lowercased", "PhotoCraft=PhotoCraft=storytold/photocraft",
			[]release.App{{Key: "photocraft", Name: "PhotoCraft", Repo: "storytold/photocraft"}}},
		{"key punctuation", "my.app_v2-beta=App=org/app",
			[]release.App{{Key: "my.app_v2-beta", Name: "App", Repo: "org/app"}}},
		{"repo case kept", "a=A=StoryTold/Photo.Craft_2-x",
			[]release.App{{Key: "a", Name: "A", Repo: "StoryTold/Photo.Craft_2-x"}}},
		{"name may hold non-ASCII and punctuation", "a=Fotó Craft (β) / 2=o/a",
			[]release.App{{Key: "a", Name: "Fotó Craft (β) / 2", Repo: "o/a"}}},
		{"trailing comma skipped", "a=A=o/a,",
			[]release.App{{Key: "a", Name: "A", Repo: "o/a"}}},
		{"empty entries skipped", ",a=A=o/a,, ,b=B=o/b",
			[]release.App{{Key: "a", Name: "A", Repo: "o/a"}, {Key: "b", Name: "B", Repo: "o/b"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := config.ParseApps(tc.in)
			if err != nil {
				t.Fatalf("ParseApps(%q): %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseApps(%q):\n got %v\nwant %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseAppsErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // the error must contain this; every entry error quotes the entry
	}{
		{"two parts", "a=A", `entry "a=A"`},
		{"one part", "good=G=o/g,photocraft", `entry "photocraft"`},
		{"four parts", "a=A=o/a=x", `entry "a=A=o/a=x"`},
		{"empty key", "=A=o/a", `entry "=A=o/a": empty key`},
		{"key with space", "my app=A=o/a", `entry "my app=A=o/a": key "my app"`},
		{"key with colon", "a:b=A=o/a", `entry "a:b=A=o/a": key "a:b"`},
		{"key with slash", "a/b=A=o/a", `key "a/b"`},
		{"key with quote", `a"b=A=o/a`, `key "a\"b"`},
		{"key with non-ASCII", "photocraftß=A=o/a", `key "photocraftß"`},
		{"key with Kelvin sign", "\u212Aelvin=A=o/a", "key"},
		{"empty name", "a= =o/a", `entry "a= =o/a": empty name`},
		{"name with control character", "a=A\x01B=o/a", "control character"},
		{"name with invalid UTF-8", "a=A\xffB=o/a", "invalid UTF-8"},
		{"empty repo", "a=A=", `entry "a=A=": repo "" is not org/project`},
		{"repo without slash", "a=A=photocraft", `repo "photocraft" is not org/project`},
		{"repo with empty org", "a=A=/photocraft", `repo "/photocraft"`},
		{"repo with empty project", "a=A=storytold/", `repo "storytold/"`},
		{"repo with three parts", "a=A=storytold/photo/craft", `repo "storytold/photo/craft"`},
		{"repo with space", "a=A=story told/photocraft", `repo "story told/photocraft"`},
		{"repo with dot dot", "a=A=storytold/..", `repo "storytold/.."`},
		{"repo with dot", "a=A=./photocraft", `repo "./photocraft"`},
		{"repo with query", "a=A=storytold/photocraft?x", `repo "storytold/photocraft?x"`},
		{"repo as URL", "a=A=https://github.com/storytold/photocraft", `entry "a=A=https://github.com/storytold/photocraft"`},
		{"repeated key", "a=A=o/a,b=B=o/b,a=Again=o/c", `entry "a=Again=o/c": key "a" is already listed`},
		{"repeated key in other case", "a=A=o/a,A=Again=o/c", `entry "A=Again=o/c": key "a" is already listed`},
		{"only commas", " , ,", "no app listed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := config.ParseApps(tc.in)
			if err == nil {
				t.Fatalf("ParseApps(%q) = %v, want an error containing %q", tc.in, got, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseApps(%q) error = %q, want it to contain %q", tc.in, err, tc.want)
			}
			if got != nil {
				t.Errorf("ParseApps(%q) = %v with an error, want nil", tc.in, got)
			}
		})
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
	marked := func(keys ...string) []string {
		got, err := config.WithPrereleases(apps, strings.Join(keys, ","))
		if err != nil {
			t.Fatalf("WithPrereleases(%q): %v", keys, err)
		}
		var pre []string
		for _, a := range got {
			if a.Prereleases {
				pre = append(pre, a.Key)
			}
		}
		return pre
	}
	for _, tt := range []struct {
		list []string
		want []string
	}{
		{nil, nil},
		{[]string{" "}, nil},
		{[]string{"PhotoCraft ", " artcraft-launcher", ""}, []string{"photocraft", "artcraft-launcher"}},
		{[]string{" * "}, release.Keys(apps)},
	} {
		if got := marked(tt.list...); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("WithPrereleases(%q) marks %q, want %q", tt.list, got, tt.want)
		}
	}
	for _, bad := range []struct{ list, want string }{
		{"photocraft,nosuch", `key "nosuch" is not one of`},
		{"photocraft,PHOTOCRAFT", `key "PHOTOCRAFT" is listed twice`},
		{"*,photocraft", "* stands alone"},
		{"photocraft,*", "* stands alone"},
		{"\u212aelvin", "is not one of"},
	} {
		if _, err := config.WithPrereleases(apps, bad.list); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("WithPrereleases(%q) = %v, want an error containing %q", bad.list, err, bad.want)
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
	for _, tt := range []struct {
		name, list string
		want       map[string]string // app key → prefix
	}{
		{"blank", " ", map[string]string{}},
		{"one", "artcraft-launcher=artcraft-v", map[string]string{"artcraft-launcher": "artcraft-v"}},
		{"two, trimmed, any case", " PhotoCraft = photocraft- ,artcraft-launcher=artcraft-v,",
			map[string]string{"photocraft": "photocraft-", "artcraft-launcher": "artcraft-v"}},
		{"a slash and a plus", "photocraft=release/+", map[string]string{"photocraft": "release/+"}},
		{"at the bound", "photocraft=" + strings.Repeat("p", release.MaxTagPrefix), map[string]string{"photocraft": strings.Repeat("p", release.MaxTagPrefix)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.WithTagPrefixes(apps, tt.list)
			if err != nil {
				t.Fatalf("WithTagPrefixes(%q): %v", tt.list, err)
			}
			prefixes := map[string]string{}
			for _, a := range got {
				if a.TagPrefix != "" {
					prefixes[a.Key] = a.TagPrefix
				}
			}
			if !reflect.DeepEqual(prefixes, tt.want) {
				t.Errorf("WithTagPrefixes(%q) gives %q, want %q", tt.list, prefixes, tt.want)
			}
		})
	}
	for _, bad := range []struct{ name, list, want string }{
		{"no =", "photocraft", `entry "photocraft": want key=prefix`},
		{"unknown key", "photocraft=p-,nosuch=n-", `key "nosuch" is not one of`},
		{"a key twice", "photocraft=p-,PHOTOCRAFT=q-", `key "PHOTOCRAFT" is listed twice`},
		{"empty prefix", "photocraft=", `key "photocraft": empty prefix`},
		{"blank prefix", "photocraft= ", `key "photocraft": empty prefix`},
		{"empty key", "=p-", `key "" is not one of`},
		{"a key with a non-ASCII letter", "\u212aelvin=k-", "is not one of"},
		{"a second =", "photocraft=a=b", `prefix "a=b" is not`},
		{"a space inside", "photocraft=a b", `prefix "a b" is not`},
		{"a tab inside", "photocraft=a\tb", "is not 1 to 32 bytes"},
		{"a control character", "photocraft=a\x1bb", "is not 1 to 32 bytes"},
		{"a delete", "photocraft=a\x7fb", "is not 1 to 32 bytes"},
		{"non-ASCII", "photocraft=фото-", "is not 1 to 32 bytes"},
		{"a bidi override", "photocraft=a\u202eb", "is not 1 to 32 bytes"},
		{"over the bound", "photocraft=" + strings.Repeat("p", release.MaxTagPrefix+1), "is not 1 to 32 bytes"},
		{"two dots", "photocraft=a..", "can begin a git tag"},
		{"a character git refuses", "photocraft=a~", "can begin a git tag"},
		{"a leading dot", "photocraft=.v", "can begin a git tag"},
		{"an empty component", "photocraft=a//", "can begin a git tag"},
	} {
		t.Run(bad.name, func(t *testing.T) {
			if _, err := config.WithTagPrefixes(apps, bad.list); err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("WithTagPrefixes(%q) = %v, want an error containing %q", bad.list, err, bad.want)
			}
		})
	}
	for _, a := range apps {
		if a.TagPrefix != "" {
			t.Fatalf("WithTagPrefixes modified its argument: %+v", a)
		}
	}
}
