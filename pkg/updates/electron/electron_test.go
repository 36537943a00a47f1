package electron_test

import (
	"testing"

	"github.com/storytold/craft-releases/pkg/updates/electron"
)

func TestIsChannelFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"latest.yml", true},
		{"latest-mac.yml", true},
		{"latest-linux.yml", true},
		{"latest-linux-arm64.yml", true},
		{"latest-linux-arm.yml", true},
		{"latest-linux-ia32.yml", true},
		{"beta.yml", true},
		{"beta-mac.yml", true},
		{"alpha-linux-arm64.yml", true},
		{"Nightly2.yml", true},
		{"abcdefghijklmnopqrstuvwxyz012345.yml", true}, // 32 bytes

		{"abcdefghijklmnopqrstuvwxyz0123456.yml", false}, // 33 bytes
		{"latest.yaml", false},
		{"latest.YML", false},
		{"latest.yml.blockmap", false},
		{"latest-mac.json", false},         // electron-updater 1.x's, never read now
		{"latest-linux-x64.yml", false},    // x64 has no suffix
		{"latest-linux-armv7l.yml", false}, // the updater asks for -arm
		{"latest-mac-arm64.yml", false},
		{"latest-win.yml", false},
		{"latest-.yml", false},
		{"latest-linux-.yml", false},
		{".yml", false},
		{"-mac.yml", false},
		{"1beta.yml", false},
		{"pre-release.yml", false},
		{"builder-debug.yml", false}, // electron-builder's build log, sometimes uploaded
		{"builder-effective-config.yaml", false},
		{"beta_1.yml", false},
		{"../latest.yml", false},
		{"latest .yml", false},
		{"latést.yml", false},
	} {
		if got := electron.IsChannelFile(tc.name); got != tc.want {
			t.Errorf("IsChannelFile(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
