package secret_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/secret"
)

const password = "hunter2-p4ss"

func TestMaskURL(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", ""},
		{"no user", "redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"},
		{"user only", "redis://user@h:6379", "redis://user@h:6379"},
		{"user and password", "redis://user:" + password + "@127.0.0.1:6379/0", "redis://user:[redacted]@127.0.0.1:6379/0"},
		{"password only", "rediss://:" + password + "@redis.example:6380", "rediss://:[redacted]@redis.example:6380"},
		{"encoded password", "redis://:pa%40ss" + password + "@h:6379", "redis://:[redacted]@h:6379"},
		{"cluster", "redis://:" + password + "@h1:6379?addr=h2:6379", "redis://:[redacted]@h1:6379?addr=h2:6379"},
		{"does not parse", "redis://:" + password + "@h:port", "[redacted]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := secret.MaskURL(tc.in); got != tc.want {
				t.Errorf("MaskURL(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestPrintedForms(t *testing.T) {
	v := struct {
		Token secret.String
		URL   secret.URL
	}{secret.String(password), secret.URL("redis://u:" + password + "@h:1")}
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, printed := range []string{
		fmt.Sprintf("%v", v), fmt.Sprintf("%+v", v), fmt.Sprintf("%#v", v), fmt.Sprintf("%s", v), fmt.Sprintf("%q", v.Token),
		v.Token.String(), v.URL.String(), string(js),
	} {
		if strings.Contains(printed, password) {
			t.Errorf("printed %q holds the password", printed)
		}
		if !strings.Contains(printed, secret.Mask) {
			t.Errorf("printed %q has no mask", printed)
		}
	}
	if v.Token.Reveal() != password || !strings.Contains(v.URL.Reveal(), password) {
		t.Error("Reveal lost the secret")
	}
	if secret.String("").String() != "" {
		t.Error("an empty secret prints")
	}
}

func TestScrub(t *testing.T) {
	got := secret.Scrub("auth "+password+" failed for "+password, "", password)
	if got != "auth [redacted] failed for [redacted]" {
		t.Errorf("Scrub = %q", got)
	}
}

// spaced returns s with sep between its characters.
func spaced(s, sep string) string { return strings.Join(strings.Split(s, ""), sep) }

func TestRedact(t *testing.T) {
	const (
		token = "cf-Tok3n_s3cret"                          // shorter than MinTokenRun: found as the token only
		key   = "Zx9_aQ-41bR7pLm2Wc8vNe5Kd0Hs3Ty6Uf1Gj4Ji" // 40 characters, the shape of Cloudflare's tokens
	)
	for _, tc := range []struct{ name, in, want string }{
		{"nothing token-shaped", `{"success":false,"errors":[{"code":10000,"message":"Authentication error"}]}`,
			`{"success":false,"errors":[{"code":10000,"message":"Authentication error"}]}`},
		{"the token", "bad token " + token + ".", "bad token [redacted]."},
		{"upper-cased", "bad token " + strings.ToUpper(token) + ".", "bad token [redacted]."},
		{"split by spaces", "bad token " + spaced(token, " ") + ".", "bad token [redacted]."},
		{"split by zero-width spaces", "bad token " + spaced(token, "\u200b") + ".", "bad token [redacted]."},
		{"split across lines, quoted", `"c","F"` + "\n" + `"-tok3n" s3cret!`, `"[redacted]!`},
		{"twice", token + " and " + token, "[redacted] and [redacted]"},
		{"a key it was not told of", `{"id":"` + key + `"}`, `{"id":"[redacted]"}`},
		{"a key split by zero-width joiners", "id " + spaced(key, "\u200d") + " end", "id [redacted] end"},
		{"a run one short of a key", "id " + key[:secret.MinTokenRun-1] + " end", "id " + key[:secret.MinTokenRun-1] + " end"},
		{"a zone id", "zones/023e105f4ecef8ad9ca31a8372d0c353/purge_cache", "zones/[redacted]/purge_cache"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := secret.Redact(tc.in, "", token); got != tc.want {
				t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestExcerpt(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"short", "bad gateway", 200, `"bad gateway"`},
		{"control and non-ASCII characters escaped", "é\x00\n\u202e", 200, `"\u00e9\x00\n\u202e"`},
		{"cut", strings.Repeat("ab ", 100), 7, `"ab ab a"...`},
		{"cut on a character boundary", "abcé", 4, `"abc"...`},
		// Redacted first: a secret across the cut leaves nothing of itself.
		{"secret across the cut", "xx " + strings.ToUpper(password), 6, `"xx [re"...`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := secret.Excerpt([]byte(tc.in), tc.max, password); got != tc.want {
				t.Errorf("Excerpt(%q, %d) = %s, want %s", tc.in, tc.max, got, tc.want)
			}
		})
	}
}
