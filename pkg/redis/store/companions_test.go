package store

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// signed returns a release of photocraft tagged tag with a bundle and its
// .sig for each name, and the signatures' texts by .sig name.
func signed(t testing.TB, tag string, names ...string) (*release.Release, map[string]string) {
	t.Helper()
	k := testkit.NewMinisignKey(t)
	r := rel(tag)
	sigs := make(map[string]string, len(names))
	for _, n := range names {
		r.Assets = append(r.Assets,
			release.Asset{Name: n, DownloadURL: release.DownloadURL(photocraft.Repo, tag, n), Platform: release.ParseAsset(n)},
			release.Asset{Name: n + ".sig", DownloadURL: release.DownloadURL(photocraft.Repo, tag, n+".sig")})
		sigs[n+".sig"] = k.Sign(n, []byte(n))
	}
	return r, sigs
}

// TestSignaturesStored checks that a fetch's signatures are written with it,
// read back, kept by a 304, replaced by another release, merged with those
// another poller wrote for the same fetch, and written back whole after a
// flush, on both write paths.
func TestSignaturesStored(t *testing.T) {
	srv := redistest.Start(t)
	a := newAdmin(t, srv)
	key := AppKey(photocraft.Key)
	ctx := context.Background()
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			srv.MustDo("FLUSHALL")
			s := newStore(t, p.url(t, srv))
			r1, sigs := signed(t, "v1.0.0", "App_1.0.0_amd64.AppImage", "App_1.0.0_x64_en-US.msi")
			one := map[string]string{"App_1.0.0_amd64.AppImage.sig": sigs["App_1.0.0_amd64.AppImage.sig"]}
			e := fetch(at("12:00"), `"e1"`, r1)
			e.Companions = release.NewCompanions(one)
			read := func() map[string]string {
				t.Helper()
				got, _, err := s.LoadApp(ctx, photocraft.Key)
				if err != nil {
					t.Fatal(err)
				}
				return got.Companions.Map()
			}

			if ok, err := s.PutFetch(ctx, photocraft.Key, e); !ok || err != nil {
				t.Fatalf("PutFetch: %v %v", ok, err)
			}
			if got := read(); !reflect.DeepEqual(got, one) {
				t.Errorf("after the fetch: got %v, want %v", got, one)
			}

			// Another poller fetched the other signature of the same fetch,
			// without the first.
			other := fetch(at("12:00"), `"e1"`, r1)
			other.Companions = release.NewCompanions(map[string]string{"App_1.0.0_x64_en-US.msi.sig": sigs["App_1.0.0_x64_en-US.msi.sig"]})
			if ok, err := s.PutFetch(ctx, photocraft.Key, other); !ok || err != nil {
				t.Fatalf("PutFetch of the same fetch: %v %v", ok, err)
			}
			if got := read(); !reflect.DeepEqual(got, sigs) {
				t.Errorf("after the same fetch's other signature: got %v, want both %v", got, sigs)
			}

			if ok, err := s.PutNotModified(ctx, photocraft.Key, fetch(at("12:30"), `"e1"`, r1)); !ok || err != nil {
				t.Fatalf("PutNotModified: %v %v", ok, err)
			}
			if got := read(); !reflect.DeepEqual(got, sigs) {
				t.Errorf("after a 304: got %v, want %v kept", got, sigs)
			}

			srv.MustDo("FLUSHALL")
			back := fetch(at("12:30"), `"e1"`, r1)
			back.Companions = release.NewCompanions(sigs)
			if ok, err := s.PutNotModified(ctx, photocraft.Key, back); !ok || err != nil {
				t.Fatalf("PutNotModified after a flush: %v %v", ok, err)
			}
			if got := read(); !reflect.DeepEqual(got, sigs) {
				t.Errorf("written back after a flush: got %v, want %v", got, sigs)
			}

			r2 := rel("v2.0.0")
			r2.Assets = r1.Assets // the same names, as bundles without a version in their names keep
			if ok, err := s.PutFetch(ctx, photocraft.Key, fetch(at("13:00"), `"e2"`, r2)); !ok || err != nil {
				t.Fatalf("PutFetch of another release: %v %v", ok, err)
			}
			if got := read(); got != nil {
				t.Errorf("after another release: got %v, want none", got)
			}
			if got := a.hgetall(key)[fieldCompanions]; got != "{}" {
				t.Errorf("field after another release: got %q, want {}", got)
			}
		})
	}
}

// TestSignaturesRefused checks that a signatures field that is not the
// stored release's checked signatures reads as none, with the refusal noted,
// while the fetch still counts.
func TestSignaturesRefused(t *testing.T) {
	r, sigs := signed(t, "v1.0.0", "App_1.0.0_amd64.AppImage")
	good := sigs["App_1.0.0_amd64.AppImage.sig"]
	encode := func(m map[string]string) string {
		b, err := release.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	raw, err := release.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	many := map[string]string{}
	for i := range release.MaxCompanions + 1 {
		many[strings.Repeat("x", i+1)+".sig"] = good
	}
	for _, tc := range []struct {
		name, field, wantErr string
	}{
		{"not json", `{"App_1.0.0_amd64.AppImage.sig":`, "not a JSON object"},
		{"an array", `["x"]`, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"a name not of the release", encode(map[string]string{"other.sig": good}), "no companion of the release"},
		{"a bundle, not its .sig", encode(map[string]string{"App_1.0.0_amd64.AppImage": good}), "no companion of the release"},
		{"not a signature", encode(map[string]string{"App_1.0.0_amd64.AppImage.sig": "aGVsbG8="}), "minisign"},
		{"tampered", encode(map[string]string{"App_1.0.0_amd64.AppImage.sig": good[:len(good)-8] + "AAAAAAA="}), "minisign"},
		{"not its text", encode(map[string]string{"App_1.0.0_amd64.AppImage.sig": good + "\n"}), "not stored as its text"},
		{"too many", encode(many), "over 32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{fieldV: formatVersion, fieldFetchedMS: ms(at("12:00")), fieldETag: `"e"`,
				fieldRelease: string(raw), fieldCompanions: tc.field}
			e, err := DecodeApp(photocraft, h, at("12:00"))
			if e.Companions != nil {
				t.Errorf("signatures: got %v, want none", e.Companions.Map())
			}
			if !e.Fetched() {
				t.Errorf("the fetch: got none, want it kept")
			}
			if err == nil || !strings.Contains(err.Error(), fieldCompanions) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err: got %v, want one naming %s and %q", err, fieldCompanions, tc.wantErr)
			}
		})
	}
	h := map[string]string{fieldV: formatVersion, fieldFetchedMS: ms(at("12:00")), fieldETag: `"e"`,
		fieldRelease: string(raw), fieldCompanions: encode(sigs)}
	if e, err := DecodeApp(photocraft, h, at("12:00")); err != nil || !reflect.DeepEqual(e.Companions.Map(), sigs) {
		t.Errorf("good field: got %v, %v; want %v", e.Companions.Map(), err, sigs)
	}
}
