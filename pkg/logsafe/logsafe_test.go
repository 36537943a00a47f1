package logsafe_test

import (
	"errors"
	"testing"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/logsafe"
)

func TestQuote(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "", ""},
		{"printable ascii", `poller-7d9f-x W/"e1" ~!`, `poller-7d9f-x W/"e1" ~!`},
		{"right-to-left override", "EVIL\u202eDENWO", `"EVIL\u202eDENWO"`},
		{"other bidi controls", "\u200e\u200f\u202a\u2066\u2069\u061c", `"\u200e\u200f\u202a\u2066\u2069\u061c"`},
		{"c1 controls", "a\u0080\u0085\u009b2J\u009f", `"a\u0080\u0085\u009b2J\u009f"`},
		{"esc and bel", "v1\x1b]0;pwned\x07\x1b[2J", `"v1\x1b]0;pwned\a\x1b[2J"`},
		{"newline, tab, nul", "a\r\nb\tc\x00", `"a\r\nb\tc\x00"`},
		{"del", "\x7f", `"\x7f"`},
		{"zero-width", "ad\u200bmin\ufeff\u2060", `"ad\u200bmin\ufeff\u2060"`},
		{"line separators", "a\u2028b\u2029", `"a\u2028b\u2029"`},
		{"invalid utf-8", "a\xff\xc2", `"a\xff\xc2"`},
		{"non-ascii letters", "PhotoCraft é", `"PhotoCraft \u00e9"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := logsafe.Quote(tt.in); got != tt.want {
				t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestFields(t *testing.T) {
	tests := []struct {
		name string
		got  zap.Field
		want zap.Field
	}{
		{"string", logsafe.String("by", "EVIL\u202eDENWO"), zap.String("by", `"EVIL\u202eDENWO"`)},
		{"plain string", logsafe.String("by", "poller-1"), zap.String("by", "poller-1")},
		{"error", logsafe.NamedError("err", errors.New("load photocraft: by \u009b2J")), zap.String("err", `"load photocraft: by \u009b2J"`)},
		{"nil error", logsafe.NamedError("err", nil), zap.Skip()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.got.Equals(tt.want) {
				t.Errorf("got %+v, want %+v", tt.got, tt.want)
			}
		})
	}
}
