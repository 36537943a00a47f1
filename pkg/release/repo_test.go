package release_test

import (
	"testing"

	"github.com/storytold/craft-releases/pkg/release"
)

func TestValidRepo(t *testing.T) {
	tests := []struct {
		repo string
		want bool
	}{
		{"storytold/photocraft", true},
		{"Story-Told/photo_craft.v2", true},
		{"storytold", false},
		{"storytold/", false},
		{"/photocraft", false},
		{"storytold/photo/craft", false},
		{"storytold/..", false},
		{"./photocraft", false},
		{"story told/photocraft", false},
		{"storytold/photocraft?x", false},
		{"storytold/phötocraft", false},
	}
	for _, tt := range tests {
		if got := release.ValidRepo(tt.repo); got != tt.want {
			t.Errorf("ValidRepo(%q) = %v, want %v", tt.repo, got, tt.want)
		}
	}
}
