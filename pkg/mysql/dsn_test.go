package mysql_test

import (
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/mysql"
	"github.com/storytold/craft-releases/pkg/secret"
)

// dsnPassword holds the characters a DSN or a URL must escape.
const dsnPassword = "s3cr@t/pw:?"

// TestDSN: a DSN, or a URL turned into one; bad settings are refused naming
// the variable and what is wrong, never quoting the password.
func TestDSN(t *testing.T) {
	dsn := "craft:" + dsnPassword + "@tcp(db.internal:3306)/craft?tls=true"
	for _, tc := range []struct{ name, dsn, url, want string }{
		{"nothing", "", "", ""},
		{"a dsn", dsn, "", dsn},
		{"a url", "", "mysql://craft:s3cr%40t%2Fpw%3A%3F@db.internal:3307/craft?tls=true", "craft:" + dsnPassword + "@tcp(db.internal:3307)/craft?tls=true"},
		{"a url without a port", "", "mysql://craft@db.internal/craft", "craft@tcp(db.internal:3306)/craft"},
		{"a url with an IPv6 host", "", "mysql://craft@[::1]/craft", "craft@tcp([::1]:3306)/craft"},
	} {
		got, err := mysql.DSN(tc.dsn, tc.url)
		if err != nil || got != tc.want {
			t.Errorf("%s: DSN(%q, %q) = %q, %v; want %q", tc.name, tc.dsn, tc.url, got, err, tc.want)
		}
	}
	tests := []struct {
		name, dsn, url string
		want           []string
	}{
		{"both set", "u:p@tcp(h:3306)/d", "mysql://u@h/d", []string{"MYSQL_DSN: set, and so is MYSQL_URL: set only one"}},
		{"a dsn without a database", "craft:" + dsnPassword + "@tcp(h:3306)", "", []string{"MYSQL_DSN: does not parse as user:password@tcp(host:port)/database"}},
		{"a dsn with an open address", "craft:" + dsnPassword + "@tcp(h:3306/d", "", []string{"MYSQL_DSN: does not parse", "network address not terminated"}},
		{"a dsn with a bad parameter", "craft:" + dsnPassword + "@tcp(h:3306)/d?parseTime=maybe", "", []string{"MYSQL_DSN: does not parse", "invalid bool value: maybe"}},
		{"a dsn whose password the driver would quote", "craft:s3cr/et@tcp(h:3306)", "", []string{"MYSQL_DSN: does not parse", "craft:" + secret.Mask}},
		{"a dsn with a collation interpolation cannot escape", "u@tcp(h)/d?collation=gbk_chinese_ci", "", []string{"MYSQL_DSN: invalid DSN: interpolateParams can not be used with unsafe collations"}},
		{"a url with a collation interpolation cannot escape", "", "mysql://u@h/d?collation=sjis_japanese_ci",
			[]string{"MYSQL_URL: invalid DSN: interpolateParams can not be used with unsafe collations"}},
		{"a url of another scheme", "", "postgres://craft:" + dsnPassword + "@h/d", []string{`MYSQL_URL: scheme "postgres" is not mysql`}},
		{"a url without a database", "", "mysql://craft@h:3306", []string{"MYSQL_URL: names no database"}},
		{"a url with a path", "", "mysql://craft@h:3306/d/e", []string{"MYSQL_URL: names no database, or more than one"}},
		{"a url without a host", "", "mysql:///d", []string{"MYSQL_URL: has no host"}},
		{"a url with a fragment", "", "mysql://craft@h/d#x", []string{"MYSQL_URL: has a fragment"}},
		{"a url that does not parse", "", "mysql://craft:pw%zz@h/d", []string{"MYSQL_URL: not a URL"}},
		{"a url with a bad parameter", "", "mysql://craft:pw@h/d?interpolateParams=perhaps",
			[]string{"MYSQL_URL: parameters: invalid bool value: perhaps"}},
		{"a url with an unescaped password", "", "mysql://craft:" + dsnPassword + "@h/d",
			[]string{"MYSQL_URL: parameters hold '/' or '@'", "percent-encoded"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mysql.DSN(tc.dsn, tc.url)
			if err == nil {
				t.Fatalf("DSN(%q, %q) = %q, want an error", tc.dsn, tc.url, got)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q, want it to contain %q", err, want)
				}
			}
			for _, s := range []string{dsnPassword, "s3cr"} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q holds the password", err)
				}
			}
			if got != "" {
				t.Errorf("on error got %q, want none", got)
			}
		})
	}
}
