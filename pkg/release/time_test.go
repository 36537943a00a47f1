package release_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
)

func TestFormatTime(t *testing.T) {
	base := time.Date(2026, 10, 8, 14, 52, 50, 0, time.UTC)
	tests := []struct {
		name string
		in   time.Time
		want string
	}{
		{"whole seconds", base, "2026-10-08T14:52:50Z"},
		{"milliseconds", base.Add(120 * time.Millisecond), "2026-10-08T14:52:50.120Z"},
		{"one millisecond", base.Add(time.Millisecond), "2026-10-08T14:52:50.001Z"},
		{"microseconds", base.Add(123456 * time.Microsecond), "2026-10-08T14:52:50.123456Z"},
		{"microseconds ending in zeros", base.Add(120010 * time.Microsecond), "2026-10-08T14:52:50.120010Z"},
		{"nanoseconds", base.Add(123456789), "2026-10-08T14:52:50.123456789Z"},
		{"one nanosecond", base.Add(1), "2026-10-08T14:52:50.000000001Z"},
		{"other zone", time.Date(2026, 10, 8, 16, 52, 50, 0, time.FixedZone("CEST", 2*60*60)), "2026-10-08T14:52:50Z"},
		{"other zone across a day", time.Date(2026, 10, 8, 20, 0, 0, 5e6, time.FixedZone("", -5*60*60)), "2026-10-09T01:00:00.005Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := release.FormatTime(tc.in); got != tc.want {
				t.Errorf("FormatTime(%v) = %q, want %q", tc.in, got, tc.want)
			}
			b, err := json.Marshal(release.Time{Time: tc.in})
			if err != nil {
				t.Fatalf("json.Marshal(Time): %v", err)
			}
			if got, want := string(b), `"`+tc.want+`"`; got != want {
				t.Errorf("Time.MarshalJSON(%v) = %s, want %s", tc.in, got, want)
			}
		})
	}
}

// TestNewTime: the zero time is no time, nil, and null on the wire, which
// reads back as nil (a release with no publication date, from Redis).
func TestNewTime(t *testing.T) {
	if got := release.NewTime(time.Time{}); got != nil {
		t.Errorf("NewTime(zero) = %v, want nil", got)
	}
	now := time.Date(2026, 10, 8, 14, 52, 50, 0, time.UTC)
	if got := release.NewTime(now); got == nil || !got.Equal(now) {
		t.Errorf("NewTime(%v) = %v, want that time", now, got)
	}
	var r release.Release
	b, err := json.Marshal(struct {
		At *release.Time `json:"published_at"`
	}{release.NewTime(time.Time{})})
	if err != nil || string(b) != `{"published_at":null}` {
		t.Fatalf("zero time on the wire: got %s, %v; want null", b, err)
	}
	if err := json.Unmarshal(b, &r); err != nil || r.PublishedAt != nil {
		t.Errorf("null read back: PublishedAt = %v, %v; want nil", r.PublishedAt, err)
	}
}

// TestTimeUnmarshalJSON: RFC 3339 in any zone reads as that instant in UTC
// (written back as TestFormatTime pins); anything else is an error.
func TestTimeUnmarshalJSON(t *testing.T) {
	tests := []struct {
		name, in string
		want     time.Time // zero: an error
	}{
		{"whole seconds", `"2026-10-08T14:52:50Z"`, time.Date(2026, 10, 8, 14, 52, 50, 0, time.UTC)},
		{"milliseconds", `"2026-10-10T12:00:00.123Z"`, time.Date(2026, 10, 10, 12, 0, 0, 123e6, time.UTC)},
		{"nanoseconds", `"2026-10-10T12:00:00.123456789Z"`, time.Date(2026, 10, 10, 12, 0, 0, 123456789, time.UTC)},
		{"offset becomes UTC", `"2026-10-08T16:52:50+02:00"`, time.Date(2026, 10, 8, 14, 52, 50, 0, time.UTC)},
		{"number", `1791471170`, time.Time{}},
		{"not RFC 3339", `"Thu, 08 Oct 2026 14:52:50 GMT"`, time.Time{}},
		{"date only", `"2026-10-08"`, time.Time{}},
		{"no zone", `"2026-10-08T14:52:50"`, time.Time{}},
		{"empty string", `""`, time.Time{}},
		{"bad month", `"2026-13-08T14:52:50Z"`, time.Time{}},
		{"bool", `true`, time.Time{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got release.Time
			err := json.Unmarshal([]byte(tc.in), &got)
			if tc.want.IsZero() {
				if err == nil {
					t.Errorf("json.Unmarshal(%s) = %v, want an error", tc.in, got.Time)
				}
				return
			}
			if err != nil || !got.Equal(tc.want) || got.Location() != time.UTC {
				t.Errorf("json.Unmarshal(%s) = %v, %v; want %v in UTC", tc.in, got.Time, err, tc.want)
			}
		})
	}
	if err := new(release.Time).UnmarshalJSON([]byte(`"`)); err == nil {
		t.Errorf("UnmarshalJSON(%q) = nil, want an error", `"`)
	}
}
