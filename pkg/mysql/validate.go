package mysql

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/storytold/craft-releases/pkg/release"
)

// The limits on what a row may hold. Lengths of text are counted in
// characters (Unicode code points), as MySQL's VARCHAR counts them; the
// schema's columns have the same sizes.
const (
	MaxTitle       = 200  // a notice's title: one line
	MaxBody        = 4000 // a notice's body: newlines and tabs allowed
	MaxLink        = 2000 // an alert's link: an https:// URL
	MaxAppName     = 100  // an app's old or new display name: one line
	MaxDescription = 1000 // an app rename's description: newlines and tabs allowed
	MaxRepo        = 140  // org/project: GitHub allows 39 + 1 + 100
	MaxLive        = 100  // rows of each list published at once: the newest
)

// NoticeKind says how launchers show a notice.
type NoticeKind string

// The kinds of notices (docs/wire.md).
const (
	KindAnnouncement NoticeKind = "announcement" // inline, dismissible
	KindAlert        NoticeKind = "alert"        // a popup the user acknowledges; may have a link
)

// RenameKind says what was renamed.
type RenameKind string

// The kinds of renames (docs/wire.md).
const (
	KindAppRename  RenameKind = "app"  // an app's display name
	KindRepoRename RenameKind = "repo" // a GitHub repository, org/project
)

// Notice is one announcement or alert, as stored.
type Notice struct {
	ID        int64
	Kind      NoticeKind
	Title     string
	Body      string
	Link      string    // alerts only; "" for none
	StartsAt  time.Time // zero: live from its creation
	EndsAt    time.Time // zero: live until it is ended
	CreatedAt time.Time
}

// Rename is one app or repository rename, as stored.
type Rename struct {
	ID          int64
	Kind        RenameKind
	OldName     string
	NewName     string
	Description string    // app renames only
	RenamedAt   time.Time // zero: unknown
	StartsAt    time.Time // zero: live from its creation
	EndsAt      time.Time // zero: live until it is ended
	CreatedAt   time.Time
}

// Validate checks n against the limits and returns every problem found,
// joined (errors.Join), or nil. A title is required; a link must be an
// https:// URL and belongs to alerts only; the end, when given, must come
// after the start.
func (n Notice) Validate() error {
	var errs []error
	switch n.Kind {
	case KindAnnouncement, KindAlert:
	default:
		errs = append(errs, fmt.Errorf("kind %q is not %s or %s", n.Kind, KindAnnouncement, KindAlert))
	}
	if strings.TrimSpace(n.Title) == "" {
		errs = append(errs, errors.New("title is missing"))
	} else {
		errs = append(errs, text("title", n.Title, MaxTitle, false))
	}
	errs = append(errs, text("body", n.Body, MaxBody, true))
	if n.Link != "" {
		if n.Kind == KindAnnouncement {
			errs = append(errs, errors.New("announcements have no link (an alert may have one)"))
		} else {
			errs = append(errs, checkLink(n.Link))
		}
	}
	errs = append(errs, checkWindow(n.StartsAt, n.EndsAt))
	return errors.Join(errs...)
}

// Validate checks r against the limits and returns every problem found,
// joined, or nil. Both names are required and must differ; a repository is
// org/project; a description belongs to app renames only; the end, when
// given, must come after the start.
func (r Rename) Validate() error {
	var errs []error
	switch r.Kind {
	case KindAppRename:
		errs = append(errs, appName("old name", r.OldName), appName("new name", r.NewName),
			text("description", r.Description, MaxDescription, true))
	case KindRepoRename:
		errs = append(errs, repoName("old name", r.OldName), repoName("new name", r.NewName))
		if r.Description != "" {
			errs = append(errs, errors.New("repository renames have no description (an app rename may have one)"))
		}
	default:
		errs = append(errs, fmt.Errorf("kind %q is not %s or %s", r.Kind, KindAppRename, KindRepoRename))
	}
	if r.OldName != "" && r.OldName == r.NewName {
		errs = append(errs, fmt.Errorf("old and new names are both %q", r.OldName))
	}
	errs = append(errs, checkWindow(r.StartsAt, r.EndsAt))
	return errors.Join(errs...)
}

// text checks that s is UTF-8 of at most limit characters without control
// characters (but newlines and tabs when multiline) and without
// bidirectional formatting characters (release.Bidi), which make a title
// read as another ("Trojan Source").
func text(what, s string, limit int, multiline bool) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8", what)
	}
	if n := utf8.RuneCountInString(s); n > limit {
		return fmt.Errorf("%s is %d characters long; the limit is %d", what, n, limit)
	}
	if i := strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\t'))
	}); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		if multiline {
			return fmt.Errorf("%s holds the control character %U (only newlines and tabs are allowed)", what, r)
		}
		return fmt.Errorf("%s holds the control character %U (it is one line of text)", what, r)
	}
	if i := strings.IndexFunc(s, release.Bidi); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Errorf("%s holds the bidirectional formatting character %U, which can make it read as something else", what, r)
	}
	return nil
}

func appName(what, s string) error {
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("%s is missing", what)
	}
	return text(what, s, MaxAppName, false)
}

func repoName(what, s string) error {
	if s == "" {
		return fmt.Errorf("%s is missing", what)
	}
	if len(s) > MaxRepo {
		return fmt.Errorf("%s is %d characters long; the limit is %d", what, len(s), MaxRepo)
	}
	if !release.ValidRepo(s) {
		return fmt.Errorf("%s %q is not org/project (letters, digits, '.', '_' and '-')", what, s)
	}
	return nil
}

// checkLink checks that link is an absolute https:// URL with a host, of at
// most MaxLink characters, with no spaces or control characters.
func checkLink(link string) error {
	if len(link) > MaxLink {
		return fmt.Errorf("link is %d characters long; the limit is %d", len(link), MaxLink)
	}
	if !strings.HasPrefix(link, "https://") {
		return fmt.Errorf("link %q is not an https:// URL", link)
	}
	if strings.IndexFunc(link, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("link %q holds spaces or control characters", link)
	}
	u, err := url.Parse(link)
	if err != nil || u.Host == "" {
		return fmt.Errorf("link %q is not an https:// URL with a host", link)
	}
	return nil
}

func checkWindow(start, end time.Time) error {
	if !start.IsZero() && !end.IsZero() && !end.After(start) {
		return fmt.Errorf("end %s is not after the start %s", formatTime(end), formatTime(start))
	}
	return nil
}

// formatTime is how messages and listings show a time: RFC 3339 in UTC.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
