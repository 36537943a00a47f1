package release_test

import (
	"slices"
	"testing"

	"github.com/storytold/craft-releases/pkg/release"
)

func TestValidRepo(t *testing.T) {
	good := []string{"storytold/photocraft", "Story-Told/photo_craft.v2"}
	bad := []string{"", "storytold", "storytold/", "/photocraft", "storytold/photo/craft", "storytold/..", "./photocraft",
		"story told/photocraft", "storytold/photocraft?x", "storytold/phötocraft"}
	for i, repo := range slices.Concat(good, bad) {
		if got, want := release.ValidRepo(repo), i < len(good); got != want {
			t.Errorf("ValidRepo(%q) = %v, want %v", repo, got, want)
		}
	}
}
