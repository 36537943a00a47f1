package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestPollerRefusesABadMySQLSetting: the poller stops at start-up on a DSN
// or URL that pkg/mysql refuses, naming the variable beside every other wrong
// one and never quoting the password; `poller migrate` refuses it alike.
func TestPollerRefusesABadMySQLSetting(t *testing.T) {
	t.Parallel()
	const pw = "s3cr3tpw"
	tests := []struct {
		name string
		vars map[string]string
		want []string
	}{
		{"a dsn that does not parse", map[string]string{"MYSQL_DSN": "craft:" + pw + "/x@tcp(db:3306)"},
			[]string{"MYSQL_DSN: does not parse as user:password@tcp(host:port)/database", "[redacted]"}},
		{"a url of another scheme", map[string]string{"MYSQL_URL": "postgres://craft:" + pw + "@db/craft"},
			[]string{`MYSQL_URL: scheme "postgres" is not mysql`}},
		{"both", map[string]string{"MYSQL_DSN": "craft:" + pw + "@tcp(db)/craft", "MYSQL_URL": "mysql://craft@db/craft"},
			[]string{"MYSQL_DSN: set, and so is MYSQL_URL: set only one"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{"REDIS_URL": "redis://127.0.0.1:1", "MYSQL_POLLER_REPLICAS": "three"}
			for k, v := range tc.vars {
				vars[k] = v
			}
			getenv := func(k string) string { return vars[k] }
			for _, args := range [][]string{nil, {"migrate"}} {
				err := run(context.Background(), args, getenv, io.Discard, io.Discard)
				if err == nil {
					t.Fatalf("poller %q started, want an error", args)
				}
				for _, want := range append(tc.want, `MYSQL_POLLER_REPLICAS: "three" is not a whole number`) {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("poller %q: error %q, want it to contain %q", args, err, want)
					}
				}
				if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "s3cr") {
					t.Errorf("poller %q: error %q holds the password", args, err)
				}
			}
		})
	}
}
