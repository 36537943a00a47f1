package testkit

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// NodeTool returns the absolute path of the repository's tools/<name>, a
// Node.js harness, with the npm package pkg installed there at the version
// its package-lock.json pins: npm ci where it is missing or another
// version, as task lint-openapi installs Redocly. Without Node.js and npm
// it fails the test rather than skips, so that CI always runs it.
func NodeTool(t testing.TB, name, pkg string) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (Node.js 18 or later with npm; task deps installs them): %v", tool, err)
		}
	}
	_, here, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(here), "..", "..", "tools", name)
	var lock struct {
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		t.Fatalf("%s's package-lock.json: %v", name, err)
	}
	pinned := lock.Packages["node_modules/"+pkg].Version
	if pinned == "" {
		t.Fatalf("%s's package-lock.json pins no %s", name, pkg)
	}
	// Test binaries of several packages may get here at once: one installs,
	// the others wait for it, then find the pinned version.
	installLock, err := os.OpenFile(filepath.Join(os.TempDir(), "craft-releases-npm-"+name+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer installLock.Close()
	if err := syscall.Flock(int(installLock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("lock the install of %s: %v", name, err)
	}
	defer syscall.Flock(int(installLock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing the file releases it anyway
	var installed struct{ Version string }
	if b, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json")); err == nil {
		_ = json.Unmarshal(b, &installed) // a broken install reads as none
	}
	if installed.Version != pinned {
		cmd := exec.CommandContext(t.Context(), "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	return dir
}

// ElectronFile is what electron-updater's own code read in one channel
// file (tools/electron-updater/resolve.js): OK with the version and every
// download resolved against the feed's base URL, or the error it refused
// the file with.
type ElectronFile struct {
	OK      bool
	Error   string
	Version string
	Files   []struct{ URL, SHA512 string }
	// Package is the web installer's package for this machine's arch, nil
	// for none.
	Package *struct{ Path, SHA512 string }
}

// ElectronResolve reads files, channel files as a feed serves them, as
// electron-updater's generic provider configured with base reads them
// (parseUpdateInfo, its version check, resolveFiles), in one Node.js
// process, with the electron-updater pinned in tools/electron-updater.
func ElectronResolve(t testing.TB, base string, files []string) []ElectronFile {
	t.Helper()
	dir := NodeTool(t, "electron-updater", "electron-updater")
	encoded := make([][]byte, len(files)) // as base64: a JSON string holds only UTF-8
	for i, f := range files {
		encoded[i] = []byte(f)
	}
	var read []ElectronFile
	NodeJSON(t, dir, map[string]any{"base": base, "files": encoded}, &read, "resolve.js")
	if len(read) != len(files) {
		t.Fatalf("node resolve.js: %d answers for %d files", len(read), len(files))
	}
	return read
}

// NodeJSON runs node with args in dir, in as JSON on its standard input, and
// reads its standard output as JSON into out; the test fails, with node's
// standard error, when it fails or prints anything else.
func NodeJSON(t testing.TB, dir string, in, out any, args ...string) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "node", args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	printed, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	if err := json.Unmarshal(printed, out); err != nil {
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, printed)
	}
}

// VelopackApp is a Velopack app as installed: its manifest's id, version
// and channel, the feed its update check asks for (releases.{channel}.json).
type VelopackApp struct {
	ID, Version, Channel string
}

// VelopackUpdate is what Velopack's update check gave for one feed: the
// full package it would update to (nil for none), or its error.
type VelopackUpdate struct {
	Target *struct{ Version, Type, FileName string } `json:"target"`
	Error  string                                    `json:"error"`
}

// VelopackCheck runs Velopack's own update check (the npm package velopack
// pinned in tools/velopack, its Rust UpdateManager and HttpSource, through
// tools/velopack/check.js) for app, installed in a temporary directory,
// against each feed base URL in turn, in one Node.js process.
func VelopackCheck(t testing.TB, app VelopackApp, urls ...string) []VelopackUpdate {
	t.Helper()
	tool := NodeTool(t, "velopack", "velopack")
	dir := t.TempDir()
	for _, d := range []string{"current", "packages"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	manifest := `<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://schemas.microsoft.com/packaging/2010/07/nuspec.xsd">
  <metadata><id>` + app.ID + `</id><title>` + app.ID + `</title><description>` + app.ID + `</description><authors>Storytold</authors>
    <version>` + app.Version + `</version><channel>` + app.Channel + `</channel><mainExe>` + app.ID + `</mainExe></metadata>
</package>
`
	for name, text := range map[string]string{"current/sq.version": manifest, "Update": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), "node", append([]string{"check.js", dir}, urls...)...)
	cmd.Dir = tool
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node check.js: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		if text, ok := strings.CutPrefix(line, "RESULTS "); ok {
			var results []VelopackUpdate
			if err := json.Unmarshal([]byte(text), &results); err != nil || len(results) != len(urls) {
				t.Fatalf("check.js's results %s: %v, want %d", text, err, len(urls))
			}
			return results
		}
	}
	t.Fatalf("node check.js printed no results:\n%s", out)
	return nil
}
