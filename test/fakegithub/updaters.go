package fakegithub

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/storytold/craft-releases/pkg/release"
)

// WithUpdaterFiles returns r, a release of repo, with what the updaters
// the service serves read (docs/updates.md), each file holding a few bytes
// of its own and each companion served by the asset endpoint with its
// digest: the six updater bundles of a Tauri app, each with its .sig when
// sign is not nil (sign returns a .sig's text for a file's name and bytes);
// Squirrel.Windows' RELEASES and its package; electron-updater's latest.yml
// and latest-mac.yml with the installer and the two macOS zips they name
// (the zips also serve Squirrel.Mac); and Velopack's releases.win.json with
// its package. The names carry the tag's version, as the tools write them.
func WithUpdaterFiles(repo string, r Release, sign func(name string, data []byte) string) Release {
	_, project, _ := strings.Cut(repo, "/")
	product := strings.ToUpper(project[:1]) + project[1:]
	v := strings.TrimPrefix(r.TagName, "v")
	id := int64(9000)
	add := func(name string, content []byte) {
		sum := sha256.Sum256(content)
		r.Assets = append(r.Assets, Asset{ID: id, Name: name, ContentType: "application/octet-stream", State: "uploaded",
			Size: int64(len(content)), Digest: "sha256:" + hex.EncodeToString(sum[:]), Content: content,
			BrowserDownloadURL: release.DownloadURL(repo, r.TagName, name)})
		id++
	}
	for _, bundle := range []string{product + "_" + v + "_x64-setup.exe", product + "_" + v + "_x64_en-US.msi", product + "_universal.app.tar.gz",
		product + "_" + v + "_amd64.AppImage", product + "_" + v + "_amd64.deb", product + "-" + v + "-1.x86_64.rpm"} {
		content := []byte("the bundle " + bundle)
		add(bundle, content)
		if sign != nil {
			add(bundle+".sig", []byte(sign(bundle, content)))
		}
	}

	nupkg := project + "-" + v + "-full.nupkg"
	pkg := []byte("the package " + nupkg)
	add(nupkg, pkg)
	add("RELEASES", fmt.Appendf(nil, "%X %s %d\n", sha1.Sum(pkg), nupkg, len(pkg)))

	setup, zip, armZip := product+"-Setup-"+v+".exe", product+"-"+v+"-mac.zip", product+"-"+v+"-arm64-mac.zip"
	b64 := func(b []byte) string {
		sum := sha512.Sum512(b)
		return base64.StdEncoding.EncodeToString(sum[:])
	}
	files := map[string][]byte{}
	for _, name := range []string{setup, zip, armZip} {
		files[name] = []byte("the installer " + name)
		add(name, files[name])
	}
	add("latest.yml", fmt.Appendf(nil, "version: %s\nfiles:\n  - url: %s\n    sha512: %s\n    size: %d\npath: %s\nsha512: %s\nreleaseDate: '2026-10-08T14:52:50.000Z'\n",
		v, setup, b64(files[setup]), len(files[setup]), setup, b64(files[setup])))
	add("latest-mac.yml", fmt.Appendf(nil, "version: %s\nfiles:\n  - url: %s\n    sha512: %s\n    size: %d\n  - url: %s\n    sha512: %s\n    size: %d\npath: %s\nsha512: %s\nreleaseDate: '2026-10-08T14:52:50.000Z'\n",
		v, zip, b64(files[zip]), len(files[zip]), armZip, b64(files[armZip]), len(files[armZip]), zip, b64(files[zip])))

	vpk := product + "-" + v + "-full.nupkg"
	vpkBytes := []byte("the Velopack package " + vpk)
	add(vpk, vpkBytes)
	sum := sha256.Sum256(vpkBytes)
	add("releases.win.json", fmt.Appendf(nil, `{"Assets":[{"PackageId":%q,"Version":%q,"Type":"Full","FileName":%q,"SHA1":"%X","SHA256":"%x","Size":%d,"NotesMarkdown":"","NotesHTML":""}]}`,
		product, v, vpk, sha1.Sum(vpkBytes), sum, len(vpkBytes)))
	return r
}
