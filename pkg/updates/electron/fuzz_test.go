package electron_test

import (
	"reflect"
	"testing"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/electron"
)

// FuzzParse feeds Parse any text: it never panics, and of a file it
// accepts, Absolute against a release carrying the files it names serves a
// file that reads as the same with absolute URLs, or fails exactly when
// Check does.
func FuzzParse(f *testing.F) {
	for _, tc := range valid {
		f.Add(fill(tc.body))
	}
	for _, tc := range refused {
		if len(tc.body) < 4<<10 {
			f.Add(fill(tc.body))
		}
	}
	f.Fuzz(func(t *testing.T, body string) {
		file, err := electron.Parse([]byte(body))
		if err != nil {
			return
		}
		rel := &release.Release{Tag: tag}
		relative(file, func(name *string) {
			if release.GoodAssetName(*name) {
				rel.Assets = append(rel.Assets, release.Asset{Name: *name, DownloadURL: url(*name)})
			}
		})
		served, err := electron.Absolute([]byte(body), rel)
		if checked := electron.Check(file, rel); (err == nil) != (checked == nil) {
			t.Fatalf("Absolute: %v, but Check: %v", err, checked)
		}
		if err != nil || len(served) > electron.MaxFile {
			return
		}
		got, err := electron.Parse(served)
		must(t, err)
		if want := absolute(file); !reflect.DeepEqual(got, want) {
			t.Fatalf("Parse of what Absolute served:\ngot  %+v\nwant %+v", got, want)
		}
	})
}
