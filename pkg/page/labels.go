package page

import (
	"strconv"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
)

// packages name each package type for people, with its file extension.
var packages = map[string]struct{ label, ext string }{
	release.PackageMSI:           {"Installer", ".msi"},
	release.PackagePortableZip:   {"Portable", ".zip"},
	release.PackageDMG:           {"Disk image", ".dmg"},
	release.PackageCLIZip:        {"Command-line tools", ".zip"},
	release.PackageAppImage:      {"AppImage", ".AppImage"},
	release.PackageAppImageZsync: {"AppImage zsync", ".zsync"},
	release.PackageDeb:           {"Debian, Ubuntu", ".deb"},
	release.PackageRPM:           {"Fedora, openSUSE", ".rpm"},
	release.PackageFlatpak:       {"Flatpak", ".flatpak"},
	release.PackageTarGz:         {"Archive", ".tar.gz"},
	release.PackageWebZip:        {"Web build", ".zip"},
}

// archLabels name each arch for people.
var archLabels = map[string]string{
	release.ArchX64:       "x64",
	release.ArchX86:       "32-bit x86",
	release.ArchARM64:     "Arm64",
	release.ArchUniversal: "Apple silicon and Intel",
}

// archOf returns p's arch, "" for none.
func archOf(p release.Platform) string {
	if p.Arch == nil {
		return ""
	}
	return *p.Arch
}

// detail is a button's second line: the arch (as Apple names its Macs on
// macOS), the file's extension and size.
func detail(p release.Platform, size int64) string {
	d := packages[p.PackageType].ext + " · " + byteSize(size)
	a := archOf(p)
	switch {
	case a == "":
		return d
	case p.OS == release.OSMacOS && a == release.ArchARM64:
		return "Apple silicon · " + d
	case p.OS == release.OSMacOS && a == release.ArchX64:
		return "Intel · " + d
	}
	return archLabels[a] + " · " + d
}

// byteSize writes n bytes for people, in decimal units as file managers do,
// with a no-break space before the unit.
func byteSize(n int64) string {
	const unit = 1000
	if n < unit {
		return strconv.FormatInt(n, 10) + "\u00a0B"
	}
	v, i := float64(n), -1
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	prec := 0
	if v < 9.95 { // 9.95 and above round to two digits
		prec = 1
	}
	return strconv.FormatFloat(v, 'f', prec, 64) + "\u00a0" + [...]string{"kB", "MB", "GB", "TB"}[i]
}

// stamp is an instant as the page writes it: absolute and in UTC, so that a
// page rendered once stays true however long it is served.
type stamp struct{ t time.Time }

func newStamp(t time.Time) *stamp {
	if t.IsZero() {
		return nil
	}
	return &stamp{t.UTC()}
}

// Machine is the datetime attribute's value.
func (s *stamp) Machine() string { return release.FormatTime(s.t) }

// Date is the day: "8 Oct 2026".
func (s *stamp) Date() string { return s.t.Format("2 Jan 2006") }

// DateTime is the day and the minute: "10 Oct 2026, 12:00 UTC".
func (s *stamp) DateTime() string { return s.t.Format("2 Jan 2006, 15:04 UTC") }
