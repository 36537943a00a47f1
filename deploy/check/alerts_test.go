package check

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

const alertTestsFile = "../components/monitoring/alerts_test.yaml"

// firingOnly is a test group, to append to the tests, in which
// CraftReleasesNew fires.
const firingOnly = `
  - name: new
    alert_rule_test:
      - eval_time: 1m
        alertname: CraftReleasesNew
        exp_alerts:
          - exp_labels: {severity: warning}
`

// TestAlertUnitTests runs promtool's unit tests of the rendered alerts
// (deploy/components/monitoring/alerts_test.yaml): each alert fires for its
// fault and stays silent when the fleet is healthy. promtool comes with
// Debian's prometheus package, which the deps task installs: without it the
// test fails rather than skips, so that CI always runs it.
func TestAlertUnitTests(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is not installed (apt-get install prometheus, or go tool -modfile=tools/go.mod task deps): %v", err)
	}
	s := render(t, "testdata/monitoring")
	tests := readFile(t, alertTestsFile)
	if problems := AlertTests(s, []byte(tests)); len(problems) > 0 {
		t.Errorf("alert tests:\n%s", strings.Join(problems, "\n"))
	}
	rules, err := RuleFile(s)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string]string{"rules.yaml": string(rules), "alerts_test.yaml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

func TestAlertsDoc(t *testing.T) {
	t.Parallel()
	s := render(t, "testdata/monitoring")
	if problems := AlertsDoc(s, readFile(t, "../../docs/metrics.md")); len(problems) > 0 {
		t.Errorf("docs/metrics.md:\n%s", strings.Join(problems, "\n"))
	}
}

// TestAlertTestChecksCatchDrift breaks the rules, their tests or their
// documentation in memory, one way per case, and wants the checks to say so.
func TestAlertTestChecksCatchDrift(t *testing.T) {
	t.Parallel()
	monitored := render(t, "testdata/monitoring")
	tests := readFile(t, alertTestsFile)
	doc := readFile(t, "../../docs/metrics.md")
	addAlert := func(s *Set) {
		g := &s.PrometheusRules[0].Spec.Groups[0]
		r := g.Rules[len(g.Rules)-1]
		r.Alert = "CraftReleasesNew"
		g.Rules = append(g.Rules, r)
	}
	cases := []struct {
		name  string
		brk   func(s *Set)
		tests string
		doc   string
		want  string
	}{
		{"an alert without tests", addAlert, tests, doc, "no case shows CraftReleasesNew firing"},
		{"an alert left out of the doc", addAlert, tests, doc, "docs/metrics.md does not list the alert CraftReleasesNew"},
		{"a test of an alert that is gone", func(s *Set) {
			g := &s.PrometheusRules[0].Spec.Groups[0]
			g.Rules = slices.DeleteFunc(g.Rules, func(r monitoringv1.Rule) bool { return r.Alert == "CraftReleasesAPISlow" })
		}, tests, doc, "test CraftReleasesAPISlow, which no rule defines"},
		{"a firing case alone", addAlert, tests + firingOnly, doc, "no case shows CraftReleasesNew silent"},
		{"a severity changed", func(s *Set) {
			for i, r := range s.PrometheusRules[0].Spec.Groups[0].Rules {
				if r.Alert == "CraftReleasesAPISlow" {
					s.PrometheusRules[0].Spec.Groups[0].Rules[i].Labels["severity"] = "critical"
				}
			}
		}, tests, doc, "docs/metrics.md gives CraftReleasesAPISlow severity warning for 10m, the rule critical for 10m"},
		{"a documented alert that is gone", func(*Set) {}, tests, doc + "| `CraftReleasesOld` | warning | 5m | [x](operations.md#data-is-stale) | gone |\n", "lists the alert CraftReleasesOld, which no rule defines"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			s := monitored.DeepCopy()
			tt.brk(s)
			problems := append(AlertTests(s, []byte(tt.tests)), AlertsDoc(s, tt.doc)...)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tt.want) }) {
				t.Errorf("got problems %q, want one containing %q", problems, tt.want)
			}
		})
	}
}

// TestDashboardRatioWithoutErrors evaluates the dashboard's "5xx ratio"
// query with promtool against a fleet that never answered a 5xx other than
// those CraftReleasesAPIErrors leaves out (/readyz's, the webhook's while
// Redis is down): it must show 0, as the alert does, not "No data".
func TestDashboardRatioWithoutErrors(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is not installed (apt-get install prometheus, or go tool -modfile=tools/go.mod task deps): %v", err)
	}
	var d Dashboard
	if err := json.Unmarshal([]byte(readFile(t, "../grafana-dashboard.json")), &d); err != nil {
		t.Fatal(err)
	}
	var expr string
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Title == "5xx ratio" && len(p.Targets) > 0 {
				expr = p.Targets[0].Expr
			}
		}
	}
	walk(d.Panels)
	if expr == "" {
		t.Fatal(`no panel "5xx ratio"`)
	}
	test := fmt.Sprintf(`tests:
  - interval: 1m
    input_series:
      - series: 'craft_api_requests_total{environment="x",namespace="x",route="/v1/craft_apps/release_info",code="200"}'
        values: '0+60x20'
      - series: 'craft_api_requests_total{environment="x",namespace="x",route="/readyz",code="503"}'
        values: '0+1x20'
      - series: 'craft_api_requests_total{environment="x",namespace="x",route="/v1/craft_apps/github_webhook",code="503"}'
        values: '0+1x20'
    promql_expr_test:
      - expr: %q
        eval_time: 15m
        exp_samples:
          - labels: '{}'
            value: 0
`, promQLOf(expr))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ratio_test.yaml"), []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promtool, "test", "rules", "ratio_test.yaml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
}
