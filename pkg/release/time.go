package release

import (
	"fmt"
	"time"
)

// Time is an instant on the wire: RFC 3339 in UTC with a literal Z, fractional
// seconds left out when zero and otherwise written with 3, 6 or 9 digits.
type Time struct{ time.Time }

// NewTime returns a *Time for t, or nil when t is zero (JSON null).
func NewTime(t time.Time) *Time {
	if t.IsZero() {
		return nil
	}
	return &Time{t}
}

// FormatTime formats t in the wire's time format.
func FormatTime(t time.Time) string {
	return string(appendTime(nil, t))
}

func appendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	b = t.AppendFormat(b, "2006-01-02T15:04:05")
	switch ns := t.Nanosecond(); {
	case ns == 0:
	case ns%1_000_000 == 0:
		b = fmt.Appendf(b, ".%03d", ns/1_000_000)
	case ns%1_000 == 0:
		b = fmt.Appendf(b, ".%06d", ns/1_000)
	default:
		b = fmt.Appendf(b, ".%09d", ns)
	}
	return append(b, 'Z')
}

// MarshalJSON writes t as a JSON string in the wire's time format.
func (t Time) MarshalJSON() ([]byte, error) {
	b := append(make([]byte, 0, 32), '"')
	return append(appendTime(b, t.Time), '"'), nil
}

// UnmarshalJSON reads any RFC 3339 time; it fails on anything else.
func (t *Time) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("time %s: not a JSON string", b)
	}
	v, err := time.Parse(time.RFC3339Nano, string(b[1:len(b)-1]))
	if err != nil {
		return fmt.Errorf("time: %w", err)
	}
	t.Time = v.UTC()
	return nil
}
