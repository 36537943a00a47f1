package check

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/storytold/craft-releases/pkg/daemon"
)

// Metric is one metric family as docs/metrics.md documents it.
type Metric struct {
	Type   string              // counter, gauge or histogram
	Labels map[string][]string // label name → its documented values, nil when open
}

var (
	metricRow = regexp.MustCompile("^\\|\\s*`(craft_[a-z0-9_]+)`\\s*\\|\\s*([a-z]+)[^|]*\\|([^|]*)\\|")
	labelCell = regexp.MustCompile("`([a-z_][a-z0-9_]*)`(?:\\s*\\(([^)]*)\\))?")
	backticks = regexp.MustCompile("`([^`]*)`")
)

// ParseMetricsDoc reads the metric tables of docs/metrics.md: every row
// whose first cell is a `craft_…` name, with its type and its labels, and
// each label's values where the row lists them in parentheses. It fails when
// the document has no such row or names a metric twice.
func ParseMetricsDoc(md string) (map[string]Metric, error) {
	metrics := map[string]Metric{}
	for line := range strings.Lines(md) {
		m := metricRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name := m[1]
		if _, dup := metrics[name]; dup {
			return nil, fmt.Errorf("metrics doc: %s is documented twice", name)
		}
		metric := Metric{Type: m[2], Labels: map[string][]string{}}
		for _, l := range labelCell.FindAllStringSubmatch(m[3], -1) {
			var values []string
			for _, v := range backticks.FindAllStringSubmatch(l[2], -1) {
				values = append(values, v[1])
			}
			metric.Labels[l[1]] = values
		}
		metrics[name] = metric
	}
	if len(metrics) == 0 {
		return nil, fmt.Errorf("metrics doc: no row names a craft_ metric")
	}
	return metrics, nil
}

// podLabels are the pods' labels that the PodMonitor copies onto every
// series it scrapes (podTargetLabels): which environment an overlay is, and
// whether it runs more than one pod of each binary by design.
var podLabels = []string{"environment", "redundancy"}

// targetLabel reports whether Prometheus adds name to every series it
// scrapes from a pod (the scrape target's labels).
func targetLabel(name string) bool {
	switch name {
	case "instance", "job", "namespace", "pod", "container", "service", "endpoint":
		return true
	}
	return slices.Contains(podLabels, name)
}

// Vocabulary is what a PromQL expression of the service may select: the
// documented metrics, the series recording rules make, and Prometheus's own
// up.
type Vocabulary struct {
	Metrics  map[string]Metric
	Recorded []string
}

// CheckExpr parses expr as PromQL and returns a problem for a syntax error,
// for every series it selects that is not in v (a histogram's _bucket, _sum
// and _count count as its own), for every label it matches that the metric
// does not have, and for every value it asks of a label whose values are
// documented that is not one of them.
func (v Vocabulary) CheckExpr(expr string) []string {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return []string{fmt.Sprintf("PromQL %q does not parse: %v", expr, err)}
	}
	var problems []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if ok {
			problems = append(problems, v.checkSelector(vs)...)
		}
		return nil
	})
	return problems
}

func (v Vocabulary) checkSelector(vs *parser.VectorSelector) []string {
	name := vs.Name
	// up is Prometheus's own; process_start_time_seconds comes with the Go
	// client's standard collectors, which docs/metrics.md lists as a whole.
	if slices.Contains(v.Recorded, name) || name == "up" || name == "process_start_time_seconds" {
		return nil
	}
	metric, ok := v.Metrics[name]
	extra := ""
	if !ok {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			base, cut := strings.CutSuffix(name, suffix)
			if m, found := v.Metrics[base]; cut && found && m.Type == "histogram" {
				metric, ok = m, true
				if suffix == "_bucket" {
					extra = "le"
				}
			}
		}
	}
	if !ok {
		return []string{fmt.Sprintf("PromQL selects %s, which docs/metrics.md does not document", vs.String())}
	}
	var problems []string
	for _, m := range vs.LabelMatchers {
		if m.Name == model.MetricNameLabel || targetLabel(m.Name) || m.Name == extra {
			continue
		}
		values, known := metric.Labels[m.Name]
		switch {
		case !known:
			problems = append(problems, fmt.Sprintf("PromQL %s matches label %s, which %s does not have", vs.String(), m.Name, name))
		case m.Type == labels.MatchEqual && len(values) > 0 && !slices.Contains(values, m.Value):
			problems = append(problems, fmt.Sprintf("PromQL %s asks %s=%q, not one of the documented values %q", vs.String(), m.Name, m.Value, values))
		}
	}
	return problems
}

// The alerts issues 5 and 16 ask for, by name.
func requiredAlerts() []string {
	return []string{
		"CraftReleasesDataStale",        // data older than twice the interval
		"CraftReleasesFleetBackoff",     // a fleet backoff longer than 15 min
		"CraftReleasesPollerStandalone", // pollers standalone for more than 10 min
		"CraftReleasesNoPoller",         // no poller running, per namespace
		"CraftReleasesAPIErrors",        // API 5xx
		"CraftReleasesAPIDown",          // every API pod down
		"CraftReleasesTargetDown",       // any target up == 0
		"CraftReleasesRedundancyLost",   // one of two pollers or API pods left
		"CraftReleasesGitHubFailing",    // the share of failed GitHub requests
		"CraftReleasesGitHubQuotaLow",   // the quota running out before its reset
		"CraftReleasesAPISlow",          // latency
		// The per-app view and a rate limit of any length.
		"CraftReleasesAppFailing",        // one app failing or without its release, whatever the others
		"CraftReleasesGitHubRateLimited", // a rate limit of any length
	}
}

// templateAction is one {{ … }} of a Prometheus template.
var templateAction = regexp.MustCompile(`\{\{[^}]*\}\}`)

// runbookAnchors returns the #sections a runbook_url may name: the one after
// its #, or each that its template may choose ({{ if … }}a{{ else }}b{{ end }}).
func runbookAnchors(url string) []string {
	_, anchor, ok := strings.Cut(url, "#")
	if !ok {
		return nil
	}
	return strings.Fields(templateAction.ReplaceAllString(anchor, " "))
}

// PrometheusRules checks the PrometheusRules of s: every expression passes
// CheckExpr, every alert has a duration, a severity of warning or critical,
// a summary and a runbook_url whose #section is a heading of the runbook
// (given as its Markdown), and every alert of requiredAlerts is there.
func PrometheusRules(s *Set, metrics map[string]Metric, runbook string) []string {
	anchors := headingAnchors(runbook)
	v := Vocabulary{Metrics: metrics}
	for _, pr := range s.PrometheusRules {
		for _, g := range pr.Spec.Groups {
			for _, r := range g.Rules {
				if r.Record != "" {
					v.Recorded = append(v.Recorded, r.Record)
				}
			}
		}
	}
	var problems []string
	seen := map[string]bool{}
	for _, pr := range s.PrometheusRules {
		for _, g := range pr.Spec.Groups {
			for _, r := range g.Rules {
				name := r.Alert + r.Record
				for _, p := range v.CheckExpr(r.Expr.String()) {
					problems = append(problems, fmt.Sprintf("PrometheusRule %s rule %s: %s", pr.Name, name, p))
				}
				if r.Alert == "" {
					continue
				}
				seen[r.Alert] = true
				bad := func(format string, args ...any) {
					problems = append(problems, fmt.Sprintf("PrometheusRule %s alert %s: ", pr.Name, r.Alert)+fmt.Sprintf(format, args...))
				}
				if r.For == nil || *r.For == "" {
					bad("no for: one bad scrape would page")
				}
				if sev := r.Labels["severity"]; sev != "warning" && sev != "critical" {
					bad("severity %q, want warning or critical", sev)
				}
				if r.Annotations["summary"] == "" {
					bad("no summary")
				}
				named := runbookAnchors(r.Annotations["runbook_url"])
				if len(named) == 0 {
					bad("runbook_url %q names no section of docs/operations.md", r.Annotations["runbook_url"])
				}
				for _, anchor := range named {
					if !anchors[anchor] {
						bad("runbook_url %q names #%s, no section of docs/operations.md", r.Annotations["runbook_url"], anchor)
					}
				}
			}
		}
	}
	for _, a := range requiredAlerts() {
		if !seen[a] {
			problems = append(problems, fmt.Sprintf("no alert %s", a))
		}
	}
	return problems
}

// headingAnchors returns the anchors GitHub gives the headings of md:
// lowercased, spaces to hyphens, punctuation other than - and _ dropped.
func headingAnchors(md string) map[string]bool {
	anchors := map[string]bool{}
	for line := range strings.Lines(md) {
		title, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "#")
		if !ok {
			continue
		}
		title = strings.TrimSpace(strings.TrimLeft(title, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
				b.WriteRune(r)
			}
		}
		anchors[b.String()] = true
	}
	return anchors
}

// PodMonitors checks the PodMonitors of s: each selects the pods of
// both binaries, on a port every one of them declares, at /metrics, and
// copies the podLabels (which checkScrape wants on every pod).
func PodMonitors(s *Set) []string {
	var problems []string
	for _, pm := range s.PodMonitors {
		for _, l := range podLabels {
			if !slices.Contains(pm.Spec.PodTargetLabels, l) {
				problems = append(problems, fmt.Sprintf("PodMonitor %s: podTargetLabels has no %s, which the alerts group or select by", pm.Name, l))
			}
		}
		covered := map[string]bool{}
		for _, w := range s.ours() {
			if !selects(&pm.Spec.Selector, k8slabels.Set(w.deploy.Spec.Template.Labels)) {
				continue
			}
			covered[w.binary] = true
			for _, ep := range pm.Spec.PodMetricsEndpoints {
				if ep.Port == nil || !slices.ContainsFunc(w.c.Ports, func(p corev1.ContainerPort) bool { return p.Name == *ep.Port }) {
					problems = append(problems, fmt.Sprintf("PodMonitor %s: %s declares no port named %v", pm.Name, w, ep.Port))
				}
				if ep.Path != daemon.MetricsPath {
					problems = append(problems, fmt.Sprintf("PodMonitor %s: path %q, want %s", pm.Name, ep.Path, daemon.MetricsPath))
				}
			}
		}
		for _, b := range []string{"api", "poller"} {
			if !covered[b] {
				problems = append(problems, fmt.Sprintf("PodMonitor %s: selects no %s pod", pm.Name, b))
			}
		}
	}
	if len(s.PodMonitors) == 0 {
		problems = append(problems, "no PodMonitor")
	}
	return problems
}

// Dashboard is the part of a Grafana dashboard's JSON model the checks read.
type Dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			IncludeAll bool   `json:"includeAll"`
			Multi      bool   `json:"multi"`
		} `json:"list"`
	} `json:"templating"`
}

// dashboardScope are the variables that pick one environment and one of its
// namespaces: every series a panel selects is matched by both, so that no
// panel mixes them.
var dashboardScope = []string{"environment", "namespace"}

// Panel is a Grafana panel; a row panel holds panels of its own when it is
// collapsed.
type Panel struct {
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []Panel `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// grafanaVariable matches $name, ${name} and ${name:format}.
var grafanaVariable = regexp.MustCompile(`\$\{[^}]+\}|\$[A-Za-z_][A-Za-z0-9_]*`)

// promQLOf replaces Grafana's variables in a panel's query with what
// Grafana would put there, so that PromQL can parse it: a duration for the
// interval macros, a placeholder for the rest (which sit in label values).
func promQLOf(expr string) string {
	return grafanaVariable.ReplaceAllStringFunc(expr, func(v string) string {
		switch strings.Trim(v, "${}") {
		case "__rate_interval", "__interval", "__range":
			return "5m"
		}
		return "x"
	})
}

// DashboardJSON parses a Grafana dashboard's JSON and returns a problem for
// a panel without a query, for every query CheckExpr refuses, for a series
// selected without the dashboardScope variables or a scope variable that
// lets several values through, and for every text of mustShow (a metric
// name, a function) that no query contains.
func DashboardJSON(data []byte, metrics map[string]Metric, mustShow []string) []string {
	var d Dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return []string{fmt.Sprintf("dashboard: %v", err)}
	}
	var problems []string
	if d.UID == "" || d.Title == "" {
		problems = append(problems, "dashboard: no uid or no title")
	}
	for _, name := range dashboardScope {
		found := false
		for _, tv := range d.Templating.List {
			if tv.Name == name {
				found = true
				if tv.IncludeAll || tv.Multi {
					problems = append(problems, fmt.Sprintf("dashboard variable %s lets several values through: panels would mix them", name))
				}
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("dashboard: no variable %s", name))
		}
	}
	v := Vocabulary{Metrics: metrics}
	var all strings.Builder
	var walk func([]Panel)
	walk = func(panels []Panel) {
		for _, p := range panels {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if len(p.Targets) == 0 {
				problems = append(problems, fmt.Sprintf("dashboard panel %q: no query", p.Title))
			}
			for _, t := range p.Targets {
				all.WriteString(t.Expr + "\n")
				for _, problem := range v.CheckExpr(promQLOf(t.Expr)) {
					problems = append(problems, fmt.Sprintf("dashboard panel %q query %s: %s", p.Title, t.RefID, problem))
				}
				for _, problem := range unscoped(t.Expr) {
					problems = append(problems, fmt.Sprintf("dashboard panel %q query %s: %s", p.Title, t.RefID, problem))
				}
			}
		}
	}
	walk(d.Panels)
	for _, m := range mustShow {
		if !strings.Contains(all.String(), m) {
			problems = append(problems, fmt.Sprintf("dashboard: no panel shows %s", m))
		}
	}
	return problems
}

// unscoped returns a problem for every series expr (a panel's query, with
// Grafana's variables) selects without matching each dashboardScope label
// to its variable.
func unscoped(expr string) []string {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVariable.ReplaceAllStringFunc(expr, func(v string) string {
		switch name := strings.Trim(v, "${}"); name {
		case "__rate_interval", "__interval", "__range":
			return "5m"
		default:
			return "var_" + name
		}
	}))
	if err != nil {
		return nil // CheckExpr reports it
	}
	var problems []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		for _, l := range dashboardScope {
			if !slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool {
				return m.Name == l && m.Value == "var_"+l
			}) {
				problems = append(problems, fmt.Sprintf("%s is not matched by $%s", vs.String(), l))
			}
		}
		return nil
	})
	return problems
}
