package minisign_test

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/minisign"
)

// key is a key pair made by the real minisign.
type key struct {
	dir, secret string
	pub         string // tauri.conf.json's pubkey: the base64 of the public-key file
	file        string // the public-key file
}

// newKey makes a key pair with Debian's minisign, without a password. The
// test fails without minisign rather than skips, so that CI always runs it.
func newKey(t testing.TB) key {
	t.Helper()
	if _, err := exec.LookPath("minisign"); err != nil {
		t.Fatalf("minisign is not installed (apt-get install minisign, or go tool -modfile=tools/go.mod task deps): %v", err)
	}
	dir := t.TempDir()
	k := key{dir: dir, secret: filepath.Join(dir, "k.key")}
	run(t, "minisign", "-G", "-W", "-p", filepath.Join(dir, "k.pub"), "-s", k.secret)
	k.file = readFile(t, filepath.Join(dir, "k.pub"))
	k.pub = base64.StdEncoding.EncodeToString([]byte(k.file))
	return k
}

// sign signs message with minisign as Tauri's CLI lays a signature out
// (trusted comment "timestamp:…\tfile:…"), prehashed or, with legacy, in
// the legacy format, and returns the .sig text Tauri uploads: the base64 of
// the box, on one line.
func (k key) sign(t testing.TB, message string, legacy bool) string {
	t.Helper()
	file := filepath.Join(k.dir, "ArtCraft_0.41.0_x64-setup.exe")
	must(t, os.WriteFile(file, []byte(message), 0o600))
	args := []string{"-S", "-s", k.secret, "-m", file, "-x", file + ".minisig",
		"-c", "signature from tauri secret key", "-t", "timestamp:1700000000\tfile:ArtCraft_0.41.0_x64-setup.exe"}
	if legacy {
		args = append(args, "-l")
	}
	run(t, "minisign", args...)
	return base64.StdEncoding.EncodeToString([]byte(readFile(t, file+".minisig")))
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	return string(b)
}

func decode(t testing.TB, s string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	must(t, err)
	return string(b)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func encode(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestSignatureOfItsKey: a signature minisign made, prehashed or legacy, in
// a .sig as Tauri writes it, parses to its algorithm, key id and trusted
// comment, and its key accepts it.
func TestSignatureOfItsKey(t *testing.T) {
	k := newKey(t)
	pub, err := minisign.ParsePublicKey(k.pub)
	must(t, err)
	// The id as minisign prints it in the key's comment, without leading zeros.
	printed := strings.Fields(k.file)[5]
	id, err := strconv.ParseUint(printed, 16, 64)
	must(t, err)
	if got := binary.LittleEndian.Uint64(pub.KeyID[:]); got != id {
		t.Errorf("key id %016X, want minisign's %s", got, printed)
	}
	if got, want := strings.TrimLeft(pub.KeyID.String(), "0"), printed; got != want {
		t.Errorf("KeyID.String() = %q, want %q with leading zeros", got, want)
	}
	for _, tc := range []struct {
		name      string
		legacy    bool
		around    string // white space around the .sig's text
		prehashed bool
	}{
		{name: "prehashed", prehashed: true},
		{name: "legacy", legacy: true},
		{name: "trailing line feed", around: "\n", prehashed: true},
		{name: "white space around", around: " \r\n\t", prehashed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := k.sign(t, "bundle bytes", tc.legacy)
			s, err := minisign.ParseSignature([]byte(tc.around + text + tc.around))
			must(t, err)
			if s.Text != text {
				t.Errorf("Text = %q, want the .sig without white space %q", s.Text, text)
			}
			if s.Prehashed != tc.prehashed {
				t.Errorf("Prehashed = %v, want %v", s.Prehashed, tc.prehashed)
			}
			if s.KeyID != pub.KeyID {
				t.Errorf("KeyID = %s, want the key's %s", s.KeyID, pub.KeyID)
			}
			if got, want := s.TrustedComment, "timestamp:1700000000\tfile:ArtCraft_0.41.0_x64-setup.exe"; got != want {
				t.Errorf("TrustedComment = %q, want %q", got, want)
			}
			if err := pub.Check(s); err != nil {
				t.Errorf("Check: %v, want nil", err)
			}
			// What the feed serves, decoded as the updater does, verifies
			// the signed bytes.
			sig := filepath.Join(t.TempDir(), "served.minisig")
			must(t, os.WriteFile(sig, []byte(decode(t, s.Text)), 0o600))
			run(t, "minisign", "-V", "-q", "-p", filepath.Join(k.dir, "k.pub"), "-m", filepath.Join(k.dir, "ArtCraft_0.41.0_x64-setup.exe"), "-x", sig)
		})
	}
}

// TestSignatureOfAnotherKey: the app's key refuses a signature by another
// key, one by another key relabelled with the app's key id, and its own
// with the trusted comment changed.
func TestSignatureOfAnotherKey(t *testing.T) {
	app, other := newKey(t), newKey(t)
	pub, err := minisign.ParsePublicKey(app.pub)
	must(t, err)
	// relabel puts the app's key id on other's signature.
	relabel := func(box string) string {
		lines := strings.Split(box, "\n")
		b := []byte(decode(t, lines[1]))
		copy(b[2:10], pub.KeyID[:])
		lines[1] = base64.StdEncoding.EncodeToString(b)
		return strings.Join(lines, "\n")
	}
	for _, tc := range []struct {
		name string
		sig  string
		want error
	}{
		{"another key", other.sign(t, "bundle bytes", false), minisign.ErrOtherKey},
		{"another key relabelled", encode(relabel(decode(t, other.sign(t, "bundle bytes", false)))), minisign.ErrForged},
		{"trusted comment changed", encode(strings.Replace(decode(t, app.sign(t, "bundle bytes", false)), "timestamp:1700000000", "timestamp:1700000001", 1)), minisign.ErrForged},
	} {
		s, err := minisign.ParseSignature([]byte(tc.sig))
		must(t, err)
		if err := pub.Check(s); !errors.Is(err, tc.want) {
			t.Errorf("%s: Check: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestHostileSignature: ParseSignature refuses every .sig that is not one
// line of base64 of a well-formed box, saying why.
func TestHostileSignature(t *testing.T) {
	k := newKey(t)
	good := k.sign(t, "bundle bytes", false)
	box := decode(t, good)
	lines := strings.Split(strings.TrimSuffix(box, "\n"), "\n")
	// line replaces line i (from 0) of the box, keeping the final line feed.
	line := func(i int, s string) string {
		l := append([]string(nil), lines...)
		l[i] = s
		return encode(strings.Join(l, "\n") + "\n")
	}
	// sigLine is line 2 with its decoded bytes changed by f.
	sigLine := func(f func([]byte) []byte) string {
		return line(1, base64.StdEncoding.EncodeToString(f([]byte(decode(t, lines[1])))))
	}
	for _, tc := range []struct {
		name string
		text string
		want string // in the error
	}{
		{"empty", "", "1 lines, want 4"},
		{"oversized", good + strings.Repeat(" ", minisign.MaxSignatureText-len(good)+1), "over 4096"},
		{"invalid base64", "not base64!", "not padded standard base64"},
		{"url base64", strings.NewReplacer("+", "-", "/", "_").Replace(good) + "-_", "not padded standard base64"},
		{"no padding", strings.TrimRight(encode(box+"xy"), "="), "not padded standard base64"},
		{"wrapped base64", good[:76] + "\n" + good[76:], "several lines"},
		{"the box itself", box, "several lines"},
		{"not utf-8", encode(strings.Replace(box, "tauri", "\xff", 1)), "not UTF-8"},
		{"truncated box", encode(strings.Join(lines[:3], "\n") + "\n"), "3 lines, want 4"},
		{"a fifth line", encode(box + "more\n"), "5 lines, want 4"},
		{"crlf", encode(strings.Join(lines, "\r\n") + "\r\n"), "control character"},
		{"no untrusted prefix", line(0, "signature from tauri secret key"), `line 1: does not start with "untrusted comment: "`},
		{"no trusted prefix", line(2, "timestamp:1700000000"), `line 3: does not start with "trusted comment: "`},
		{"escape in trusted comment", line(2, "trusted comment: \x1b[2Jtimestamp:1"), "line 3: control character U+001B"},
		{"nul in untrusted comment", line(0, "untrusted comment: a\x00b"), "line 1: control character U+0000"},
		{"c1 control in trusted comment", line(2, "trusted comment: a\u0085b"), "line 3: control character U+0085"},
		{"wrong algorithm", sigLine(func(b []byte) []byte { b[1] = 'B'; return b }), `algorithm "EB"`},
		{"signature line short", sigLine(func(b []byte) []byte { return b[:73] }), "line 2: 73 bytes, want 74"},
		{"signature line long", sigLine(func(b []byte) []byte { return append(b, 0) }), "line 2: 75 bytes, want 74"},
		{"signature line not base64", line(1, "RWQ!"), "line 2: not padded standard base64"},
		{"global signature short", line(3, base64.StdEncoding.EncodeToString(make([]byte, 63))), "line 4: 63 bytes, want 64"},
	} {
		if _, err := minisign.ParseSignature([]byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ParseSignature: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestHostilePublicKey: ParsePublicKey reads tauri.conf.json's pubkey and
// refuses anything else, saying why.
func TestHostilePublicKey(t *testing.T) {
	k := newKey(t)
	lines := strings.Split(strings.TrimSuffix(k.file, "\n"), "\n")
	keyBytes := []byte(decode(t, lines[1]))
	if _, err := minisign.ParsePublicKey(encode(strings.TrimSuffix(k.file, "\n"))); err != nil {
		t.Errorf("ParsePublicKey(without the final line feed): %v", err)
	}
	withKey := func(b []byte) string { return encode(lines[0] + "\n" + base64.StdEncoding.EncodeToString(b) + "\n") }
	for _, tc := range []struct {
		name string
		b64  string
		want string
	}{
		{"a bare key line", encode("Ed" + strings.Repeat("k", 40)), "1 lines, want 2"},
		{"the file itself", k.file, "several lines"},
		{"white space around", " " + k.pub, "not padded standard base64"},
		{"oversized", strings.Repeat("A", 1025), "over 1024"},
		{"no comment prefix", encode("minisign public key\n" + lines[1] + "\n"), "does not start with"},
		{"prehashed algorithm", withKey(append([]byte("ED"), keyBytes[2:]...)), `algorithm "ED", want Ed`},
		{"short key", withKey(keyBytes[:41]), "41 bytes, want 42"},
		{"a third line", encode(k.file + "x\n"), "3 lines, want 2"},
	} {
		if _, err := minisign.ParsePublicKey(tc.b64); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ParsePublicKey: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// FuzzParseSignature: on any input ParseSignature returns without
// panicking, and what it accepts reads the same again from its Text, which
// is bounded, without white space around it, with comments free of control
// characters but tab.
func FuzzParseSignature(f *testing.F) {
	k := newKey(f)
	f.Add(k.sign(f, "bundle bytes", false))
	f.Add(k.sign(f, "bundle bytes", true))
	f.Add("")
	f.Add(encode("untrusted comment: \n\ntrusted comment: \n\n"))
	f.Fuzz(func(t *testing.T, text string) {
		s, err := minisign.ParseSignature([]byte(text))
		if err != nil {
			return
		}
		if len(s.Text) > minisign.MaxSignatureText || strings.TrimSpace(s.Text) != s.Text {
			t.Errorf("Text = %q: over the bound or with white space around", s.Text)
		}
		again, err := minisign.ParseSignature([]byte(s.Text))
		if err != nil || again != s {
			t.Errorf("ParseSignature(Text) = %+v, %v; want %+v", again, err, s)
		}
		if strings.ContainsFunc(s.TrustedComment, func(r rune) bool { return r != '\t' && r < ' ' }) {
			t.Errorf("TrustedComment %q holds a control character", s.TrustedComment)
		}
	})
}
