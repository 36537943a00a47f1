package check

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

// readFile returns the contents of name or fails the test.
func readFile(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// metricsDoc returns the metrics of docs/metrics.md or fails the test.
func metricsDoc(t testing.TB) map[string]Metric {
	t.Helper()
	m, err := ParseMetricsDoc(readFile(t, "../../docs/metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// dashboardMustShow is what the dashboard must show: freshness,
// the GitHub quota, the fleet's mode, request rates and latencies.
func dashboardMustShow() []string {
	return []string{
		"time() - craft_api_app_fetched_timestamp_seconds",
		"craft_poller_github_quota_remaining",
		"craft_poller_mode",
		"rate(craft_api_requests_total",
		"histogram_quantile(0.99, sum by (le) (rate(craft_api_request_duration_seconds_bucket",
	}
}

func TestParseMetricsDoc(t *testing.T) {
	t.Parallel()
	const doc = "| metric | type | labels | meaning |\n| --- | --- | --- | --- |\n" +
		"| `craft_build_info` | gauge (1) | `binary`, `version` | what is running |\n" +
		"| `craft_poller_mode` | gauge (1 for the current mode) | `mode` (`coordinated`, `standalone`) | how |\n" +
		"| `craft_poller_round_duration_seconds` | histogram | — | how long |\n" +
		"Freshness: `craft_not_a_row`.\n"
	tests := []struct {
		name   string
		doc    string
		metric string
		want   Metric
	}{
		{"labels", doc, "craft_build_info", Metric{Type: "gauge", Labels: map[string][]string{"binary": nil, "version": nil}}},
		{"label values", doc, "craft_poller_mode", Metric{Type: "gauge", Labels: map[string][]string{"mode": {"coordinated", "standalone"}}}},
		{"no labels", doc, "craft_poller_round_duration_seconds", Metric{Type: "histogram", Labels: map[string][]string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMetricsDoc(tt.doc)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 3 {
				t.Errorf("got %d metrics, want 3", len(got))
			}
			g, _ := json.Marshal(got[tt.metric])
			w, _ := json.Marshal(tt.want)
			if string(g) != string(w) {
				t.Errorf("%s: got %s, want %s", tt.metric, g, w)
			}
		})
	}
	t.Run("a metric twice", func(t *testing.T) {
		row := "| `craft_build_info` | gauge | — | x |\n"
		if _, err := ParseMetricsDoc(row + row); err == nil {
			t.Error("got no error, want one")
		}
	})
	t.Run("the real document", func(t *testing.T) {
		m := metricsDoc(t)
		if got := m["craft_poller_github_requests_total"].Labels["outcome"]; !slices.Contains(got, "rate_limited") {
			t.Errorf("outcome values: got %q, want rate_limited among them", got)
		}
		if got := m["craft_api_request_duration_seconds"].Type; got != "histogram" {
			t.Errorf("craft_api_request_duration_seconds: got type %q, want histogram", got)
		}
	})
}

func TestCheckExpr(t *testing.T) {
	t.Parallel()
	v := Vocabulary{Metrics: metricsDoc(t), Recorded: []string{"craft:recorded"}}
	tests := []struct {
		name string
		expr string
		want string // a part of a problem; "" for none
	}{
		{"a documented gauge", `time() - craft_api_app_fetched_timestamp_seconds{app="photocraft"}`, ""},
		{"a histogram's buckets", `histogram_quantile(0.9, sum by (le) (rate(craft_api_request_duration_seconds_bucket{route="/readyz", le="0.1"}[5m])))`, ""},
		{"a documented value", `craft_poller_mode{mode="standalone", namespace="x", pod="p"}`, ""},
		{"a recorded series", `2 * craft:recorded`, ""},
		{"up", `absent(up{job="x"})`, ""},
		{"an undocumented metric", `craft_poller_requests_total`, "craft_poller_requests_total, which docs/metrics.md does not document"},
		{"a gauge's _bucket", `craft_poller_mode_bucket`, "does not document"},
		{"an undocumented label", `craft_build_info{bin="poller"}`, "matches label bin, which craft_build_info does not have"},
		{"an undocumented value", `craft_poller_mode{mode="alone"}`, `asks mode="alone", not one of the documented values`},
		{"le on a gauge", `craft_poller_mode{le="1"}`, "matches label le"},
		{"bad syntax", `sum(rate(craft_api_requests_total[5m])`, "does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems := v.CheckExpr(tt.expr)
			switch {
			case tt.want == "" && len(problems) > 0:
				t.Errorf("got problems %q, want none", problems)
			case tt.want != "" && !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tt.want) }):
				t.Errorf("got problems %q, want one containing %q", problems, tt.want)
			}
		})
	}
}

func TestAlerts(t *testing.T) {
	t.Parallel()
	metrics := metricsDoc(t)
	runbook := readFile(t, "../../docs/operations.md")
	s := render(t, "testdata/monitoring")
	if problems := PrometheusRules(s, metrics, runbook); len(problems) > 0 {
		t.Errorf("alerts:\n%s", strings.Join(problems, "\n"))
	}
	if problems := PodMonitors(s); len(problems) > 0 {
		t.Errorf("PodMonitors:\n%s", strings.Join(problems, "\n"))
	}
}

// TestAlertChecksCatchBrokenRules breaks the rendered rules in memory, one
// way per case, and wants PrometheusRules or PodMonitors to say so.
func TestAlertChecksCatchBrokenRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		brk  func(s *Set)
		want string
	}{
		{"a misspelt metric", func(s *Set) {
			r := &s.PrometheusRules[0].Spec.Groups[0].Rules[1]
			r.Expr.StrVal = strings.Replace(r.Expr.StrVal, "craft_api_app_fetched_timestamp_seconds", "craft_api_fetched_timestamp_seconds", 1)
		}, "craft_api_fetched_timestamp_seconds, which docs/metrics.md does not document"},
		{"an alert left out", func(s *Set) {
			g := &s.PrometheusRules[0].Spec.Groups[0]
			g.Rules = slices.DeleteFunc(g.Rules, func(r monitoringv1.Rule) bool { return r.Alert == "CraftReleasesNoPoller" })
		}, "no alert CraftReleasesNoPoller"},
		{"no duration", func(s *Set) {
			s.PrometheusRules[0].Spec.Groups[0].Rules[2].For = nil
		}, "no for"},
		{"an unknown severity", func(s *Set) {
			s.PrometheusRules[0].Spec.Groups[0].Rules[2].Labels["severity"] = "page"
		}, `severity "page"`},
		{"a runbook link to nowhere", func(s *Set) {
			s.PrometheusRules[0].Spec.Groups[0].Rules[2].Annotations["runbook_url"] = "https://example.com/ops#nowhere"
		}, "names #nowhere, no section of docs/operations.md"},
		{"a templated runbook link with a branch to nowhere", func(s *Set) {
			s.PrometheusRules[0].Spec.Groups[0].Rules[2].Annotations["runbook_url"] = "https://example.com/ops#{{ if gt $value 0.0 }}redundancy-lost{{ else }}nowhere{{ end }}"
		}, "names #nowhere, no section of docs/operations.md"},
		{"a PodMonitor that drops the environment", func(s *Set) {
			s.PodMonitors[0].Spec.PodTargetLabels = []string{"redundancy"}
		}, "podTargetLabels has no environment"},
		{"a PodMonitor on a port the pods lack", func(s *Set) {
			port := "http" // the API's public port: the pollers have none
			s.PodMonitors[0].Spec.PodMetricsEndpoints[0].Port = &port
		}, "declares no port named"},
		{"a PodMonitor that misses the pollers", func(s *Set) {
			s.PodMonitors[0].Spec.Selector.MatchLabels["app.kubernetes.io/component"] = "api"
		}, "selects no poller pod"},
	}
	metrics := metricsDoc(t)
	runbook := readFile(t, "../../docs/operations.md")
	monitored := render(t, "testdata/monitoring")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := monitored.DeepCopy()
			tt.brk(s)
			problems := append(PrometheusRules(s, metrics, runbook), PodMonitors(s)...)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tt.want) }) {
				t.Errorf("got problems %q, want one containing %q", problems, tt.want)
			}
		})
	}
}

func TestDashboard(t *testing.T) {
	t.Parallel()
	metrics := metricsDoc(t)
	real := readFile(t, "../grafana-dashboard.json")
	tests := []struct {
		name string
		json string
		want string // a part of a problem; "" for none
	}{
		{"deploy/grafana-dashboard.json", real, ""},
		{"not JSON", real[:len(real)/2], "dashboard:"},
		{"a misspelt metric", strings.Replace(real, "craft_poller_github_quota_remaining", "craft_poller_github_quota_left", 1), "craft_poller_github_quota_left"},
		{"a broken query", strings.Replace(real, "[$__rate_interval]))", "[$__rate_interval])", 1), "does not parse"},
		{"no latency", strings.ReplaceAll(real, "histogram_quantile(0.99", "histogram_quantile(0.98"), "no panel shows histogram_quantile(0.99"},
		{"no uid", strings.Replace(real, `"uid": "craft-releases"`, `"uid": ""`, 1), "no uid"},
		{"a panel over every environment", strings.Replace(real, `{environment=~\"$environment\",namespace=~\"$namespace\"}`, `{namespace=~\"$namespace\"}`, 1), `is not matched by $environment`},
		{"every namespace at once", strings.Replace(real, `"includeAll": false`, `"includeAll": true`, 2), "dashboard variable namespace lets several values through"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems := DashboardJSON([]byte(tt.json), metrics, dashboardMustShow())
			switch {
			case tt.want == "" && len(problems) > 0:
				t.Errorf("got problems:\n%s", strings.Join(problems, "\n"))
			case tt.want != "" && !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tt.want) }):
				t.Errorf("got problems %q, want one containing %q", problems, tt.want)
			}
		})
	}
}

func TestPromQLOf(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`rate(x{namespace=~"$namespace"}[$__rate_interval])`, `rate(x{namespace=~"x"}[5m])`},
		{`x{a="${var:regex}"}[$__range]`, `x{a="x"}[5m]`},
		{`sum(x)`, `sum(x)`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := promQLOf(tt.in); got != tt.want {
				t.Errorf("promQLOf(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRunbookLinksResolve(t *testing.T) {
	t.Parallel()
	runbook := readFile(t, "../../docs/operations.md")
	anchors := headingAnchors(runbook)
	links := regexp.MustCompile(`\]\(#([^)]+)\)`).FindAllStringSubmatch(runbook, -1)
	if len(links) == 0 {
		t.Fatal("found no #links in docs/operations.md: the pattern is wrong")
	}
	for _, m := range links {
		if !anchors[m[1]] {
			t.Errorf("docs/operations.md links to #%s, which is none of its headings", m[1])
		}
	}
}

func TestHeadingAnchors(t *testing.T) {
	t.Parallel()
	got := headingAnchors("# Operations runbook\n## API answers 5xx\n### Reading `poller status`\ntext # not a heading\n")
	for _, want := range []string{"operations-runbook", "api-answers-5xx", "reading-poller-status"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if len(got) != 3 {
		t.Errorf("got %d anchors %v, want 3", len(got), got)
	}
}
