package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
)

// Ref is how people name a notice: its kind and ID, "alert/12".
func (n Notice) Ref() string { return string(n.Kind) + "/" + strconv.FormatInt(n.ID, 10) }

// Ref is how people name a rename: its kind and ID, "app/3".
func (r Rename) Ref() string { return string(r.Kind) + "/" + strconv.FormatInt(r.ID, 10) }

// State says where a row stands at now: "scheduled", "live" or "ended" (a
// row ended before it started has an empty window, and is ended).
func (n Notice) State(now time.Time) string { return state(n.StartsAt, n.EndsAt, now) }

// State says where a row stands at now: "scheduled", "live" or "ended".
func (r Rename) State(now time.Time) string { return state(r.StartsAt, r.EndsAt, now) }

func state(start, end, now time.Time) string {
	switch {
	case !end.IsZero() && (!now.Before(end) || !end.After(start)):
		return "ended"
	case !start.IsZero() && now.Before(start):
		return "scheduled"
	}
	return "live"
}

func (n Notice) announcement() release.Announcement {
	return release.Announcement{Title: n.Title, Body: n.Body, CreatedAt: release.NewTime(n.CreatedAt)}
}

func (n Notice) alert() release.Alert {
	a := release.Alert{Title: n.Title, Body: n.Body, CreatedAt: release.NewTime(n.CreatedAt)}
	if n.Link != "" {
		link := n.Link
		a.MaybeWebLink = &link
	}
	return a
}

func (r Rename) appRename() release.AppRename {
	return release.AppRename{
		OldName: r.OldName, OldNameLower: strings.ToLower(r.OldName),
		NewName: r.NewName, NewNameLower: strings.ToLower(r.NewName),
		Description: r.Description, RenamedAt: release.NewTime(r.RenamedAt),
	}
}

func (r Rename) repoRename() release.RepoRename {
	return release.RepoRename{OldName: r.OldName, NewName: r.NewName, RenamedAt: release.NewTime(r.RenamedAt)}
}

// AddNotice validates n, refuses an end that is not after now, and stores n
// created at now. It returns n as stored, with its ID. Times are kept to the
// millisecond, in UTC.
func (d *DB) AddNotice(ctx context.Context, n Notice, now time.Time) (Notice, error) {
	now = stored(now)
	n.ID, n.CreatedAt, n.StartsAt, n.EndsAt = 0, now, stored(n.StartsAt), stored(n.EndsAt)
	if err := errors.Join(n.Validate(), notOver(n.EndsAt, now)); err != nil {
		return Notice{}, err
	}
	var (
		id  int64
		err error
	)
	switch n.Kind {
	case KindAnnouncement:
		id, err = d.insert(ctx, "INSERT INTO "+tableAnnouncements+" (title, body, starts_at, ends_at, created_at) VALUES (?, ?, ?, ?, ?)",
			n.Title, n.Body, nullTime(n.StartsAt), nullTime(n.EndsAt), n.CreatedAt)
	case KindAlert:
		id, err = d.insert(ctx, "INSERT INTO "+tableAlerts+" (title, body, web_link, starts_at, ends_at, created_at) VALUES (?, ?, ?, ?, ?, ?)",
			n.Title, n.Body, nullString(n.Link), nullTime(n.StartsAt), nullTime(n.EndsAt), n.CreatedAt)
	}
	if err != nil {
		return Notice{}, fmt.Errorf("add %s: %w", n.Kind, err)
	}
	n.ID = id
	return n, nil
}

// AddRename validates r, refuses an end that is not after now, and stores r
// created at now. It returns r as stored, with its ID.
func (d *DB) AddRename(ctx context.Context, r Rename, now time.Time) (Rename, error) {
	now = stored(now)
	r.ID, r.CreatedAt = 0, now
	r.RenamedAt, r.StartsAt, r.EndsAt = stored(r.RenamedAt), stored(r.StartsAt), stored(r.EndsAt)
	if err := errors.Join(r.Validate(), notOver(r.EndsAt, now)); err != nil {
		return Rename{}, err
	}
	var (
		id  int64
		err error
	)
	switch r.Kind {
	case KindAppRename:
		id, err = d.insert(ctx, "INSERT INTO "+tableAppRenames+" (old_name, new_name, description, renamed_at, starts_at, ends_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
			r.OldName, r.NewName, r.Description, nullTime(r.RenamedAt), nullTime(r.StartsAt), nullTime(r.EndsAt), r.CreatedAt)
	case KindRepoRename:
		id, err = d.insert(ctx, "INSERT INTO "+tableRepoRenames+" (old_name, new_name, renamed_at, starts_at, ends_at, created_at) VALUES (?, ?, ?, ?, ?, ?)",
			r.OldName, r.NewName, nullTime(r.RenamedAt), nullTime(r.StartsAt), nullTime(r.EndsAt), r.CreatedAt)
	}
	if err != nil {
		return Rename{}, fmt.Errorf("add %s rename: %w", r.Kind, err)
	}
	r.ID = id
	return r, nil
}

// notOver refuses an end that is not after now: such a row would never be
// live.
func notOver(end, now time.Time) error {
	if !end.IsZero() && !end.After(now) {
		return fmt.Errorf("end %s is not in the future (now is %s)", formatTime(end), formatTime(now))
	}
	return nil
}

func (d *DB) insert(ctx context.Context, query string, args ...any) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	res, err := d.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// EndNotice ends the notice of kind and id at now, so the next refresh
// stops publishing it. A notice that has not started yet gets an empty
// window and is never shown. It reports false when the notice had already
// ended, and ErrNotFound when there is no such notice.
func (d *DB) EndNotice(ctx context.Context, kind NoticeKind, id int64, now time.Time) (bool, error) {
	table, ok := map[NoticeKind]string{KindAnnouncement: tableAnnouncements, KindAlert: tableAlerts}[kind]
	if !ok {
		return false, fmt.Errorf("end %s/%d: kind %q is not %s or %s", kind, id, kind, KindAnnouncement, KindAlert)
	}
	ended, err := d.end(ctx, table, id, now)
	if err != nil {
		return false, fmt.Errorf("end %s/%d: %w", kind, id, err)
	}
	return ended, nil
}

// EndRename ends the rename of kind and id at now, as EndNotice ends a
// notice.
func (d *DB) EndRename(ctx context.Context, kind RenameKind, id int64, now time.Time) (bool, error) {
	table, ok := map[RenameKind]string{KindAppRename: tableAppRenames, KindRepoRename: tableRepoRenames}[kind]
	if !ok {
		return false, fmt.Errorf("end %s/%d: kind %q is not %s or %s", kind, id, kind, KindAppRename, KindRepoRename)
	}
	ended, err := d.end(ctx, table, id, now)
	if err != nil {
		return false, fmt.Errorf("end %s/%d: %w", kind, id, err)
	}
	return ended, nil
}

func (d *DB) end(ctx context.Context, table string, id int64, now time.Time) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	now = stored(now)
	// A row that has not started ends at its start, so its window stays
	// well-formed and empty.
	res, err := d.db.ExecContext(ctx, "UPDATE "+table+
		" SET ends_at = CASE WHEN starts_at > ? THEN starts_at ELSE ? END WHERE id = ? AND (ends_at IS NULL OR ends_at > ?)",
		now, now, id, now)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return n > 0, err
	}
	var one int
	err = d.db.QueryRowContext(ctx, "SELECT 1 FROM "+table+" WHERE id = ?", id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, ErrNotFound
	}
	return false, err
}

// Notices returns every stored notice, ended ones included: announcements,
// then alerts, each in creation order.
func (d *DB) Notices(ctx context.Context) ([]Notice, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	rows, err := d.db.QueryContext(ctx,
		"SELECT 1, id, title, body, NULL, starts_at, ends_at, created_at FROM "+tableAnnouncements+
			" UNION ALL SELECT 2, id, title, body, web_link, starts_at, ends_at, created_at FROM "+tableAlerts+
			" ORDER BY 1, 2")
	if err != nil {
		return nil, fmt.Errorf("list notices: %w", err)
	}
	defer rows.Close()
	var out []Notice
	for rows.Next() {
		var (
			kind               int
			n                  Notice
			link               sql.NullString
			start, end, create sql.NullTime
		)
		if err := rows.Scan(&kind, &n.ID, &n.Title, &n.Body, &link, &start, &end, &create); err != nil {
			return nil, fmt.Errorf("list notices: %w", err)
		}
		n.Kind = KindAnnouncement
		if kind == 2 {
			n.Kind = KindAlert
		}
		n.Link, n.StartsAt, n.EndsAt, n.CreatedAt = link.String, start.Time, end.Time, create.Time
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list notices: %w", err)
	}
	return out, nil
}

// Renames returns every stored rename, ended ones included: app renames,
// then repository renames, each in creation order.
func (d *DB) Renames(ctx context.Context) ([]Rename, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	rows, err := d.db.QueryContext(ctx,
		"SELECT 1, id, old_name, new_name, description, renamed_at, starts_at, ends_at, created_at FROM "+tableAppRenames+
			" UNION ALL SELECT 2, id, old_name, new_name, '', renamed_at, starts_at, ends_at, created_at FROM "+tableRepoRenames+
			" ORDER BY 1, 2")
	if err != nil {
		return nil, fmt.Errorf("list renames: %w", err)
	}
	defer rows.Close()
	var out []Rename
	for rows.Next() {
		var (
			kind                        int
			r                           Rename
			renamed, start, end, create sql.NullTime
		)
		if err := rows.Scan(&kind, &r.ID, &r.OldName, &r.NewName, &r.Description, &renamed, &start, &end, &create); err != nil {
			return nil, fmt.Errorf("list renames: %w", err)
		}
		r.Kind = KindAppRename
		if kind == 2 {
			r.Kind = KindRepoRename
		}
		r.RenamedAt, r.StartsAt, r.EndsAt, r.CreatedAt = renamed.Time, start.Time, end.Time, create.Time
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list renames: %w", err)
	}
	return out, nil
}

// stored is t as a DATETIME(3) column keeps it: UTC, to the millisecond.
func stored(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Millisecond)
}

func nullTime(t time.Time) sql.NullTime { return sql.NullTime{Time: t, Valid: !t.IsZero()} }

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
