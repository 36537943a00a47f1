package e2e

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakegithub"
)

// The Tauri app of the feed's tests, with its tags as tauri-action makes
// them, and an app whose signatures are by another key than its own.
const (
	artcraft       = "storytold/artcraft"
	artcraftApp    = "artcraft=ArtCraft=storytold/artcraft"
	tauriPrefixes  = "artcraft=artcraft-v"
	updatesPath    = "/v1/craft_apps/updates/"
	tauriBundleLen = 64 << 10
)

// artcraftBundles are the updater bundles tauri-action uploads for ArtCraft
// at version v: NSIS, MSI, the universal .app.tar.gz, AppImage, deb, rpm.
func artcraftBundles(v string) []string {
	return []string{
		"ArtCraft_" + v + "_x64-setup.exe",
		"ArtCraft_" + v + "_x64_en-US.msi",
		"ArtCraft_universal.app.tar.gz",
		"ArtCraft_" + v + "_amd64.AppImage",
		"ArtCraft_" + v + "_amd64.deb",
		"ArtCraft-" + v + "-1.x86_64.rpm",
	}
}

// tauriCases are the requests that get a bundle of artcraftBundles: each an
// updater's request (the path after the app's tauri/) and the index of the
// bundle it must get. Every target, arch and bundle type that has one, the
// route without a bundle type, and the placeholder an updater before plugin
// 2.10 leaves.
var tauriCases = []struct {
	path   string
	bundle int
}{
	{"windows/x86_64/nsis", 0}, {"windows/x86_64/msi", 1}, {"windows/x86_64/unknown", 0}, {"windows/x86_64", 0}, {"windows/x86_64/%7B%7Bbundle_type%7D%7D", 0},
	{"darwin/x86_64/app", 2}, {"darwin/x86_64/unknown", 2}, {"darwin/aarch64/app", 2}, {"darwin/aarch64/unknown", 2},
	{"linux/x86_64/appimage", 3}, {"linux/x86_64/deb", 4}, {"linux/x86_64/rpm", 5}, {"linux/x86_64/unknown", 3}, {"linux/x86_64", 3},
}

// tauriPlatforms are the keys of latest.json for artcraftBundles, each with
// its bundle.
var tauriPlatforms = map[string]int{
	"windows-x86_64": 0, "windows-x86_64-nsis": 0, "windows-x86_64-msi": 1,
	"darwin-x86_64": 2, "darwin-x86_64-app": 2, "darwin-aarch64": 2, "darwin-aarch64-app": 2,
	"linux-x86_64": 3, "linux-x86_64-appimage": 3, "linux-x86_64-deb": 4, "linux-x86_64-rpm": 5,
}

// minisignKey is a key pair the minisign binary made, without a password.
type minisignKey struct {
	pub, sec string // the files
	pubkey   string // the base64 of the public-key file: tauri.conf.json's pubkey
}

// minisign runs the minisign binary with args in dir; its error holds the
// output. A missing binary fails the test.
func minisign(t testing.TB, dir string, args ...string) error {
	t.Helper()
	bin, err := exec.LookPath("minisign")
	if err != nil {
		t.Fatalf("minisign not found (task deps installs it: apt-get install minisign): %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("minisign %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func newMinisignKey(t testing.TB) minisignKey {
	t.Helper()
	dir := t.TempDir()
	k := minisignKey{pub: filepath.Join(dir, "pub"), sec: filepath.Join(dir, "sec")}
	if err := minisign(t, dir, "-G", "-W", "-p", k.pub, "-s", k.sec); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(k.pub)
	if err != nil {
		t.Fatal(err)
	}
	k.pubkey = base64.StdEncoding.EncodeToString(b)
	return k
}

// signedRelease is a release of updater bundles of random bytes, each
// signed by a key with minisign and published with its .sig.
type signedRelease struct {
	rel   fakegithub.Release
	files map[string]string // bundle name → the file written
	sigs  map[string]string // .sig asset name → its text: the base64 of the minisign signature file
}

// newSignedRelease writes bundles (names) of random bytes, signs each with
// key, and returns repo's release tagged tag with each bundle and its .sig,
// the asset ids from firstID.
func newSignedRelease(t testing.TB, repo, tag string, firstID int64, key minisignKey, bundles ...string) signedRelease {
	t.Helper()
	dir := t.TempDir()
	s := signedRelease{rel: fakegithub.NewRelease(repo, tag), files: map[string]string{}, sigs: map[string]string{}}
	s.rel.Assets = nil
	id := firstID
	for _, name := range bundles {
		data := make([]byte, tauriBundleLen)
		_, _ = rand.Read(data)
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := minisign(t, dir, "-S", "-s", key.sec, "-m", file, "-x", file+".minisig"); err != nil {
			t.Fatal(err)
		}
		box, err := os.ReadFile(file + ".minisig")
		if err != nil {
			t.Fatal(err)
		}
		sig := []byte(base64.StdEncoding.EncodeToString(box))
		s.files[name], s.sigs[name+".sig"] = file, string(sig)
		// The bundle's bytes are not served: the service must never ask for them.
		s.rel.Assets = append(s.rel.Assets, tauriAsset(repo, tag, id, name, data, nil), tauriAsset(repo, tag, id+1, name+".sig", sig, sig))
		id += 2
	}
	return s
}

func tauriAsset(repo, tag string, id int64, name string, data, content []byte) fakegithub.Asset {
	sum := sha256.Sum256(data)
	return fakegithub.Asset{
		ID: id, Name: name, ContentType: "application/octet-stream", State: "uploaded",
		Size: int64(len(data)), Digest: "sha256:" + hex.EncodeToString(sum[:]),
		BrowserDownloadURL: release.DownloadURL(repo, tag, name), Content: content,
	}
}

// tauriUpdate is the feed's 200 (encoding/json matches the other names
// whatever their case).
type tauriUpdate struct {
	Version, Notes, URL, Signature string
	PubDate                        string `json:"pub_date"`
}

// feed fetches path of p's updater feeds.
func feed(t testing.TB, p *proc, path string, header ...string) answer {
	t.Helper()
	return fetch(t, p.base+updatesPath+path, header...)
}

// checkBundle checks that url is the download URL of the bundle want of s
// and signature its .sig as published; with a key, that minisign -V
// verifies the signature against the bytes of the file url names.
func checkBundle(t testing.TB, what string, s signedRelease, key minisignKey, rawURL, signature, want string) {
	t.Helper()
	prefix := "https://github.com/" + artcraft + "/releases/download/" + s.rel.TagName + "/"
	name, under := strings.CutPrefix(rawURL, prefix)
	file, ok := s.files[name]
	if !under || name != want || !ok {
		t.Errorf("%s: url %q, want %s%s", what, rawURL, prefix, want)
		return
	}
	if signature != s.sigs[name+".sig"] {
		t.Errorf("%s: the signature served is not %s.sig as published", what, name)
	}
	if key.pub == "" {
		return
	}
	box, err := base64.StdEncoding.DecodeString(signature)
	if err != nil {
		t.Errorf("%s: the signature served is not base64: %v", what, err)
		return
	}
	sigFile := filepath.Join(t.TempDir(), "served.minisig")
	if err := os.WriteFile(sigFile, box, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := minisign(t, filepath.Dir(sigFile), "-V", "-p", key.pub, "-m", file, "-x", sigFile); err != nil {
		t.Errorf("%s: %s with the served signature: %v", what, name, err)
	}
}

// checkNotFound checks that p answers path with the 404 whose error is want.
func checkNotFound(t testing.TB, p *proc, path, want string) {
	t.Helper()
	a := feed(t, p, path)
	var e struct {
		Success *bool
		Error   string
	}
	if a.status != http.StatusNotFound || json.Unmarshal(a.body, &e) != nil || e.Success == nil || *e.Success || e.Error != want {
		t.Errorf("%s %s: %d %s, want 404 with the error %q", p.name, path, a.status, a.body, want)
	}
}
