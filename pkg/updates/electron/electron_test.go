package electron_test

import (
	"testing"

	"github.com/storytold/craft-releases/pkg/updates/electron"
)

func TestIsChannelFile(t *testing.T) {
	t.Parallel()
	for want, names := range map[bool][]string{
		true: {
			"latest.yml", "latest-mac.yml", "latest-linux.yml", "latest-linux-arm64.yml", "latest-linux-arm.yml", "latest-linux-ia32.yml",
			"beta.yml", "beta-mac.yml", "alpha-linux-arm64.yml", "Nightly2.yml",
			"abcdefghijklmnopqrstuvwxyz012345.yml", // 32 bytes
		},
		false: {
			"abcdefghijklmnopqrstuvwxyz0123456.yml", // 33 bytes
			"latest.yaml", "latest.YML", "latest.yml.blockmap",
			"latest-mac.json",         // electron-updater 1.x's, never read now
			"latest-linux-x64.yml",    // x64 has no suffix
			"latest-linux-armv7l.yml", // the updater asks for -arm
			"latest-mac-arm64.yml", "latest-win.yml", "latest-.yml", "latest-linux-.yml", ".yml", "-mac.yml", "1beta.yml", "pre-release.yml",
			"builder-debug.yml", // electron-builder's build log, sometimes uploaded
			"builder-effective-config.yaml", "beta_1.yml", "../latest.yml", "latest .yml", "latést.yml",
		},
	} {
		for _, name := range names {
			if got := electron.IsChannelFile(name); got != want {
				t.Errorf("IsChannelFile(%q) = %v, want %v", name, got, want)
			}
		}
	}
}
