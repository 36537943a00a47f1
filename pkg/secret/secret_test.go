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
