package check

import (
	"strings"
	"testing"
)

// TestABadVariableIsReportedOnce: every check shares one resolution of each
// workload, so a variable the binary refuses is one problem (env-loads'),
// not one per rule that needs the settings; the poller's DSN is checked by
// pkg/mysql, its password masked.
func TestABadVariableIsReportedOnce(t *testing.T) {
	t.Parallel()
	const pw = "s3cretpw"
	tests := []struct {
		name, variable, value, want string
	}{
		{"an address", "HTTP_ADDR", "nowhere", `HTTP_ADDR: "nowhere" is not host:port`},
		{"a timeout", "SHUTDOWN_TIMEOUT_SECS", "soon", `SHUTDOWN_TIMEOUT_SECS: "soon" is not a whole number`},
		{"a dsn", "MYSQL_DSN", "craft:" + pw + "/x@tcp(db:3306)", "MYSQL_DSN: does not parse as user:password@tcp(host:port)/database"},
		{"a url", "MYSQL_URL", "postgres://craft:" + pw + "@db/craft", `MYSQL_URL: scheme "postgres" is not mysql`},
	}
	production := render(t, "../overlays/production")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := production.DeepCopy()
			setEnv(poller(t, s), tt.variable, tt.value)
			r := Resolve(s)
			var found []string
			for _, c := range Checks() {
				for _, p := range c.Run(r) {
					if strings.Contains(p, tt.variable) {
						found = append(found, c.Name+": "+p)
					}
					if strings.Contains(p, pw) {
						t.Errorf("check %s: %q holds the password", c.Name, p)
					}
				}
			}
			if len(found) != 1 || !strings.Contains(found[0], "env-loads: ") || !strings.Contains(found[0], tt.want) {
				t.Errorf("problems naming %s:\n%s\nwant one, from env-loads, containing %q", tt.variable, strings.Join(found, "\n"), tt.want)
			}
		})
	}
}
