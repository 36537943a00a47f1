package mysql_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/mariadbtest"
)

func TestMigrate(t *testing.T) {
	db := open(t, mariadbtest.Shared(t).NewDatabase(t).DSN(), 5*time.Second)
	ctx := context.Background()
	if _, _, err := db.Live(ctx, noon); err == nil {
		t.Error("Live on a database without the schema worked; want an error")
	}
	if cur, latest, err := db.SchemaVersion(ctx); err != nil || cur != 0 || latest < 1 {
		t.Fatalf("SchemaVersion of an empty database = %d, %d, %v; want 0, at least 1, nil", cur, latest, err)
	}
	runs := []struct {
		name string
		want []string
	}{
		{"on an empty database", []string{"00001_renames_and_notices.sql", "00002_release_decisions.sql"}},
		{"again, with nothing to do", nil},
		{"a third time", nil},
	}
	for _, r := range runs {
		got, err := db.Migrate(ctx)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		if !slices.Equal(got, r.want) {
			t.Errorf("%s: applied %q, want %q", r.name, got, r.want)
		}
	}
	cur, latest, err := db.SchemaVersion(ctx)
	if err != nil || cur != latest {
		t.Errorf("SchemaVersion after migrating = %d, %d, %v; want current = latest", cur, latest, err)
	}
	// The tables are there, and usable by the service's own user: empty,
	// non-nil lists.
	m, skipped, err := db.Live(ctx, noon)
	if err != nil || m.AppRenames == nil || m.RepoRenames == nil || m.Notices.Announcements == nil || m.Notices.Alerts == nil ||
		len(titles(m)) != 0 || len(m.Decisions) != 0 || len(skipped) != 0 {
		t.Errorf("Live after migrating = %+v, skipped %q, %v; want empty, non-nil lists", m, skipped, err)
	}
}
