package release_test

import (
	"testing"

	"github.com/storytold/craft-releases/pkg/release"
)

func TestDownloadURL(t *testing.T) {
	tests := []struct{ tag, name, want string }{
		{"v1.2.3", "a-1.2.3-windows-x64.msi", "https://github.com/o/p/releases/download/v1.2.3/a-1.2.3-windows-x64.msi"},
		{"release/1.0", "a b#?%.msi", "https://github.com/o/p/releases/download/release/1.0/a%20b%23%3F%25.msi"},
		{"v1+x", "фото.msi", "https://github.com/o/p/releases/download/v1+x/%D1%84%D0%BE%D1%82%D0%BE.msi"},
	}
	for _, tt := range tests {
		if got := release.DownloadURL("o/p", tt.tag, tt.name); got != tt.want {
			t.Errorf("DownloadURL(%q, %q) = %q, want %q", tt.tag, tt.name, got, tt.want)
		}
	}
	if got, want := release.TagURL("o/p", "v1#%"), "https://github.com/o/p/releases/tag/v1%23%25"; got != want {
		t.Errorf("TagURL = %q, want %q", got, want)
	}
}

func TestBidi(t *testing.T) {
	for _, r := range "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c" {
		if !release.Bidi(r) {
			t.Errorf("Bidi(%U) = false", r)
		}
	}
	for _, r := range "aé\u200b\u2029ب" {
		if release.Bidi(r) {
			t.Errorf("Bidi(%U) = true", r)
		}
	}
}

func TestDownloadRepo(t *testing.T) {
	dl := "https://github.com/o/p/releases/download/"
	tests := []struct{ url, tag, name, want string }{
		{dl + "v1/a.msi", "v1", "a.msi", "o/p"},
		{dl + "release/1.0/a%20b.msi", "release/1.0", "a b.msi", "o/p"},
		{dl + "v1/../../../../x/y/releases/download/v1/a.msi", "v1", "a.msi", ""},
		{dl + "v1/%2e%2e/a.msi", "v1", "a.msi", ""},
		{dl + "v1/b.msi", "v1", "a.msi", ""},
		{dl + "v2/a.msi", "v1", "a.msi", ""},
		{"https://github.com/o/releases/download/v1/a.msi", "v1", "a.msi", ""},
		{"https://github.com/../p/releases/download/v1/a.msi", "v1", "a.msi", ""},
	}
	for _, tt := range tests {
		if got, _ := release.DownloadRepo(tt.url, tt.tag, tt.name); got != tt.want {
			t.Errorf("DownloadRepo(%q, %q, %q) = %q, want %q", tt.url, tt.tag, tt.name, got, tt.want)
		}
	}
	pages := []struct{ url, tag, want string }{
		{"https://github.com/o/p/releases/tag/v1", "v1", "o/p"},
		{"https://github.com/o/p/releases/tag/release/1.0", "release/1.0", "o/p"},
		{"https://github.com/o/p/releases/tag/v1%23%25", "v1#%", "o/p"},
		{"https://github.com/o/p/releases/tag/v2", "v1", ""},
		{"https://github.com/o/p/releases/latest", "v1", ""},
		{"https://github.com/o/p/releases/", "v1", ""},
		{"https://github.com/o/p/issues/1", "v1", ""},
		{"https://github.com/o/p/releases/tag/../../../x/y/releases/tag/v1", "v1", ""},
		{"https://github.com/o/p/releases/tag/v1?x", "v1", ""},
	}
	for _, tt := range pages {
		if got, _ := release.PageRepo(tt.url, tt.tag); got != tt.want {
			t.Errorf("PageRepo(%q, %q) = %q, want %q", tt.url, tt.tag, got, tt.want)
		}
	}
}
