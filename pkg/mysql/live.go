package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
)

// The tables, one per kind of row (migrations/).
const (
	tableAppRenames    = "craft_app_renames"
	tableRepoRenames   = "craft_repo_renames"
	tableAnnouncements = "craft_announcements"
	tableAlerts        = "craft_alerts"
)

// live is the condition of a row that is live at the time given twice.
const live = "(starts_at IS NULL OR starts_at <= ?) AND (ends_at IS NULL OR ends_at > ?)"

// liveQuery reads every live row of the four tables in one statement, so one
// refresh is one round trip and sees one consistent state. Each part keeps
// the newest MaxLive rows of its table; the answer is in kind, then creation
// order. The columns are: kind, id, three texts (names and description, or
// title, body and ""), a link, the time launchers see, and the window.
var liveQuery = strings.Join([]string{
	"(SELECT 1 AS kind, id, old_name AS a, new_name AS b, description AS c, NULL AS link, renamed_at AS at, starts_at, ends_at FROM " + tableAppRenames + " WHERE " + live + " ORDER BY id DESC LIMIT " + fmt.Sprint(MaxLive) + ")",
	"(SELECT 2, id, old_name, new_name, '', NULL, renamed_at, starts_at, ends_at FROM " + tableRepoRenames + " WHERE " + live + " ORDER BY id DESC LIMIT " + fmt.Sprint(MaxLive) + ")",
	"(SELECT 3, id, title, body, '', NULL, created_at, starts_at, ends_at FROM " + tableAnnouncements + " WHERE " + live + " ORDER BY id DESC LIMIT " + fmt.Sprint(MaxLive) + ")",
	"(SELECT 4, id, title, body, '', web_link, created_at, starts_at, ends_at FROM " + tableAlerts + " WHERE " + live + " ORDER BY id DESC LIMIT " + fmt.Sprint(MaxLive) + ")",
}, " UNION ALL ") + " ORDER BY kind, id"

// The kinds of liveQuery's rows.
const (
	rowAppRename = 1 + iota
	rowRepoRename
	rowAnnouncement
	rowAlert
)

// Live reads the renames and notices live at now (inside their window: from
// starts_at, inclusive, until ends_at, exclusive), at most MaxLive of each
// list, the newest ones, in the order they were created, and the current
// decisions on releases of every app that has one (Decided). It is two
// queries: the renames and notices, then the decisions. A row that breaks
// the limits of Validate (written by hand, say) is left out and its ID, such
// as "alert/12" or "decision/3", is listed in skipped, so that one bad row
// never hides the others. The lists and the map of m are never nil.
func (d *DB) Live(ctx context.Context, now time.Time) (m release.Bulletin, skipped []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	now = now.UTC()
	args := make([]any, 0, 8)
	for range 8 {
		args = append(args, now)
	}
	rows, err := d.db.QueryContext(ctx, liveQuery, args...)
	if err != nil {
		return release.Bulletin{}, nil, fmt.Errorf("read live meta: %w", err)
	}
	defer rows.Close()
	m = release.Bulletin{
		AppRenames:  []release.AppRename{},
		RepoRenames: []release.RepoRename{},
		Notices:     release.Notices{Announcements: []release.Announcement{}, Alerts: []release.Alert{}},
	}
	for rows.Next() {
		var (
			kind             int
			id               int64
			a, b, c          string
			link             sql.NullString
			at, start, until sql.NullTime
		)
		if err := rows.Scan(&kind, &id, &a, &b, &c, &link, &at, &start, &until); err != nil {
			return release.Bulletin{}, nil, fmt.Errorf("read live meta: %w", err)
		}
		switch kind {
		case rowAppRename, rowRepoRename:
			r := Rename{ID: id, Kind: KindAppRename, OldName: a, NewName: b, Description: c,
				RenamedAt: at.Time, StartsAt: start.Time, EndsAt: until.Time}
			if kind == rowRepoRename {
				r.Kind = KindRepoRename
			}
			if r.Validate() != nil {
				skipped = append(skipped, r.Ref())
				continue
			}
			if r.Kind == KindAppRename {
				m.AppRenames = append(m.AppRenames, r.appRename())
			} else {
				m.RepoRenames = append(m.RepoRenames, r.repoRename())
			}
		case rowAnnouncement, rowAlert:
			n := Notice{ID: id, Kind: KindAnnouncement, Title: a, Body: b, Link: link.String,
				StartsAt: start.Time, EndsAt: until.Time, CreatedAt: at.Time}
			if kind == rowAlert {
				n.Kind = KindAlert
			}
			if n.Validate() != nil {
				skipped = append(skipped, n.Ref())
				continue
			}
			if n.Kind == KindAnnouncement {
				m.Notices.Announcements = append(m.Notices.Announcements, n.announcement())
			} else {
				m.Notices.Alerts = append(m.Notices.Alerts, n.alert())
			}
		}
	}
	if err := rows.Err(); err != nil {
		return release.Bulletin{}, nil, fmt.Errorf("read live meta: %w", err)
	}
	current, err := d.CurrentDecisions(ctx, "")
	if err != nil {
		return release.Bulletin{}, nil, err
	}
	var bad []string
	m.Decisions, bad = Decided(current)
	if len(current) == MaxDecisions {
		// The oldest current decisions are not read: name that as a row
		// left out, so that the refresher warns.
		bad = append(bad, "decisions past the newest "+strconv.Itoa(MaxDecisions))
	}
	return m, append(skipped, bad...), nil
}
