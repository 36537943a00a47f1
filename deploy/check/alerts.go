package check

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// A promRule is one rule as a Prometheus rule file writes it.
type promRule struct {
	Record      string            `json:"record,omitempty"`
	Alert       string            `json:"alert,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type promGroup struct {
	Name     string     `json:"name"`
	Interval string     `json:"interval,omitempty"`
	Rules    []promRule `json:"rules"`
}

// RuleFile returns the groups of every PrometheusRule of s as one Prometheus
// rule file, what Prometheus loads without the operator and what promtool
// tests.
func RuleFile(s *Set) ([]byte, error) {
	var groups []promGroup
	for _, pr := range s.PrometheusRules {
		for _, g := range pr.Spec.Groups {
			pg := promGroup{Name: g.Name}
			if g.Interval != nil {
				pg.Interval = string(*g.Interval)
			}
			for _, r := range g.Rules {
				rule := promRule{Record: r.Record, Alert: r.Alert, Expr: r.Expr.String(), Labels: r.Labels, Annotations: r.Annotations}
				if r.For != nil {
					rule.For = string(*r.For)
				}
				pg.Rules = append(pg.Rules, rule)
			}
			groups = append(groups, pg)
		}
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("no PrometheusRule groups")
	}
	return yaml.Marshal(struct {
		Groups []promGroup `json:"groups"`
	}{groups})
}

// alertTests is the part of a promtool rule test file the checks read.
type alertTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name  string `json:"name"`
		Cases []struct {
			EvalTime  string `json:"eval_time"`
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// alerts returns every alert of s with its severity and duration.
func alerts(s *Set) map[string][2]string {
	out := map[string][2]string{}
	for _, pr := range s.PrometheusRules {
		for _, g := range pr.Spec.Groups {
			for _, r := range g.Rules {
				if r.Alert == "" {
					continue
				}
				var d string
				if r.For != nil {
					d = string(*r.For)
				}
				out[r.Alert] = [2]string{r.Labels["severity"], d}
			}
		}
	}
	return out
}

// AlertTests checks a promtool rule test file against the alerts of s:
// each alert has a case where it fires and one where it is silent, and no
// case names an alert that s does not have.
func AlertTests(s *Set, testFile []byte) []string {
	var f alertTests
	if err := yaml.Unmarshal(testFile, &f); err != nil {
		return []string{fmt.Sprintf("alert tests: %v", err)}
	}
	have := alerts(s)
	fires, silent := map[string]bool{}, map[string]bool{}
	var problems []string
	for _, t := range f.Tests {
		for _, c := range t.Cases {
			if _, ok := have[c.Alertname]; !ok {
				problems = append(problems, fmt.Sprintf("alert tests %q: test %s, which no rule defines", t.Name, c.Alertname))
			}
			if len(c.ExpAlerts) > 0 {
				fires[c.Alertname] = true
			} else {
				silent[c.Alertname] = true
			}
		}
	}
	for _, a := range slices.Sorted(maps.Keys(have)) {
		if !fires[a] {
			problems = append(problems, fmt.Sprintf("alert tests: no case shows %s firing", a))
		}
		if !silent[a] {
			problems = append(problems, fmt.Sprintf("alert tests: no case shows %s silent", a))
		}
	}
	return problems
}

var alertRow = regexp.MustCompile("^\\|\\s*`(CraftReleases[A-Za-z0-9]+)`\\s*\\|\\s*([a-z]+)\\s*\\|\\s*`?([0-9a-z]+)`?\\s*\\|\\s*\\[[^]]*\\]\\(operations\\.md#([a-z0-9_-]+)\\)")

// AlertsDoc checks the alert table of docs/metrics.md (given as its
// Markdown) against the alerts of s: the same alerts, each with its severity,
// its duration, and a link to a runbook section its runbook_url names.
func AlertsDoc(s *Set, md string) []string {
	documented := map[string][2]string{}
	anchors := map[string]string{}
	var problems []string
	for line := range strings.Lines(md) {
		m := alertRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, dup := documented[m[1]]; dup {
			problems = append(problems, fmt.Sprintf("docs/metrics.md lists %s twice", m[1]))
		}
		documented[m[1]] = [2]string{m[2], m[3]}
		anchors[m[1]] = m[4]
	}
	have := alerts(s)
	runbooks := map[string][]string{}
	for _, pr := range s.PrometheusRules {
		for _, g := range pr.Spec.Groups {
			for _, r := range g.Rules {
				if r.Alert != "" {
					runbooks[r.Alert] = runbookAnchors(r.Annotations["runbook_url"])
				}
			}
		}
	}
	for _, a := range slices.Sorted(maps.Keys(have)) {
		d, ok := documented[a]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("docs/metrics.md does not list the alert %s", a))
		case d != have[a]:
			problems = append(problems, fmt.Sprintf("docs/metrics.md gives %s severity %s for %s, the rule %s for %s", a, d[0], d[1], have[a][0], have[a][1]))
		case !slices.Contains(runbooks[a], anchors[a]):
			problems = append(problems, fmt.Sprintf("docs/metrics.md links %s to #%s, its runbook_url to #%s", a, anchors[a], strings.Join(runbooks[a], " or #")))
		}
	}
	for _, a := range slices.Sorted(maps.Keys(documented)) {
		if _, ok := have[a]; !ok {
			problems = append(problems, fmt.Sprintf("docs/metrics.md lists the alert %s, which no rule defines", a))
		}
	}
	return problems
}
