package release

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/storytold/craft-releases/pkg/updates/semver"
)

// The limits on Decisions, which the operators' verbs enforce and every
// reader of Redis checks again (Verify).
const (
	// MaxWithdrawn is the most tags of one app withdrawn at once: more than
	// the releases the pollers keep of an app's history would never matter.
	MaxWithdrawn = 10
	// MaxReason is the longest reason, in characters: newlines and tabs
	// allowed, no other control or bidirectional formatting character.
	MaxReason = 1000
)

// Verify checks d as a reader of Redis must before applying it: something
// is decided; a rollout's tag is a git tag of at most MaxTag bytes and its
// percent 0 to 100; at most MaxWithdrawn withdrawals, of distinct such
// tags, each with a reason; a minimum's version is SemVer (1.2.0, no
// leading v) and it has a reason; a reason is UTF-8 of at most MaxReason
// characters without control characters but newlines and tabs, and without
// bidirectional formatting characters. It returns the first problem found.
func (d Decisions) Verify() error {
	if d.Empty() {
		return errors.New("decides nothing")
	}
	if r := d.Rollout; r != nil {
		if err := checkTag(r.Tag); err != nil {
			return fmt.Errorf("rollout: %w", err)
		}
		if r.Percent < 0 || r.Percent > 100 {
			return fmt.Errorf("rollout of %s: percent %d is not from 0 to 100", r.Tag, r.Percent)
		}
	}
	if len(d.Withdrawn) > MaxWithdrawn {
		return fmt.Errorf("%d tags withdrawn, over %d", len(d.Withdrawn), MaxWithdrawn)
	}
	for i, w := range d.Withdrawn {
		if err := checkTag(w.Tag); err != nil {
			return fmt.Errorf("withdrawal: %w", err)
		}
		for _, o := range d.Withdrawn[:i] {
			if o.Tag == w.Tag {
				return fmt.Errorf("%s is withdrawn twice", w.Tag)
			}
		}
		if err := checkReason(w.Reason); err != nil {
			return fmt.Errorf("withdrawal of %s: %w", w.Tag, err)
		}
	}
	if m := d.Minimum; m != nil {
		if _, ok := semver.Parse(m.Version); !ok {
			return fmt.Errorf("minimum version %q is not SemVer", m.Version)
		}
		if err := checkReason(m.Reason); err != nil {
			return fmt.Errorf("minimum version: %w", err)
		}
	}
	return nil
}

func checkTag(tag string) error {
	if tag == "" || len(tag) > MaxTag || !ValidTag(tag) {
		return fmt.Errorf("tag %q is not a git tag of at most %d bytes", tag, MaxTag)
	}
	return nil
}

func checkReason(s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return errors.New("no reason")
	case !utf8.ValidString(s):
		return errors.New("reason is not UTF-8")
	case utf8.RuneCountInString(s) > MaxReason:
		return fmt.Errorf("reason is over %d characters", MaxReason)
	case strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' || Bidi(r) }):
		return errors.New("reason holds a control or bidirectional formatting character")
	}
	return nil
}
