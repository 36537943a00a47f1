package check

import (
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// checkAvailability: two or more pollers spread across nodes; the API scaled
// by a HorizontalPodAutoscaler on CPU (and so no spec.replicas) behind a
// Service that reaches its port; a PodDisruptionBudget for both.
func checkAvailability(s *Resolved) []string {
	var problems []string
	for _, w := range s.binaries {
		d := w.deploy
		podLabels := labels.Set(d.Spec.Template.Labels)
		if !slices.ContainsFunc(s.PDBs, func(p *policyv1.PodDisruptionBudget) bool { return selects(p.Spec.Selector, podLabels) }) {
			problems = append(problems, fmt.Sprintf("Deployment %s: no PodDisruptionBudget selects its pods", d.Name))
		}
		switch w.binary {
		case "poller":
			if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
				problems = append(problems, fmt.Sprintf("Deployment %s: fewer than 2 replicas", d.Name))
			}
			if !spreadsAcrossNodes(d) {
				problems = append(problems, fmt.Sprintf("Deployment %s: nothing keeps two of its pods off one node (a hostname topologySpreadConstraint with DoNotSchedule, or a required podAntiAffinity)", d.Name))
			}
		case "api":
			problems = append(problems, s.checkAPIScaling(w)...)
		}
	}
	return problems
}

func (s *Resolved) checkAPIScaling(w *binary) []string {
	var problems []string
	d := w.deploy
	if d.Spec.Replicas != nil {
		problems = append(problems, fmt.Sprintf("Deployment %s: sets spec.replicas, which every apply would reset under the HorizontalPodAutoscaler", d.Name))
	}
	scaled := false
	for _, h := range s.HPAs {
		ref := h.Spec.ScaleTargetRef
		if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != d.Name {
			continue
		}
		scaled = true
		onCPU := slices.ContainsFunc(h.Spec.Metrics, func(m autoscalingv2.MetricSpec) bool {
			return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU
		})
		if !onCPU {
			problems = append(problems, fmt.Sprintf("HorizontalPodAutoscaler %s: does not scale on CPU", h.Name))
		}
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
			problems = append(problems, fmt.Sprintf("HorizontalPodAutoscaler %s: minReplicas must be at least 1 and at most maxReplicas", h.Name))
		}
	}
	if !scaled {
		problems = append(problems, fmt.Sprintf("Deployment %s: no HorizontalPodAutoscaler scales it", d.Name))
	}
	if w.err != nil {
		return problems // env-loads reports it
	}
	st := w.st
	served := false
	for _, svc := range s.Services {
		if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
			continue
		}
		served = true
		for _, p := range svc.Spec.Ports {
			if port, ok := resolvePort(w.c, p.TargetPort); !ok || port != st.port {
				problems = append(problems, fmt.Sprintf("Service %s: port %d targets %s, but the api listens on %s", svc.Name, p.Port, p.TargetPort.String(), st.addr))
			}
		}
	}
	if !served {
		problems = append(problems, fmt.Sprintf("Deployment %s: no Service selects its pods", d.Name))
	}
	return problems
}

// spreadsAcrossNodes reports whether the scheduler must put d's pods on
// different nodes: a hostname topology spread constraint that does not
// schedule anyway, or a required anti-affinity, over d's own pods.
func spreadsAcrossNodes(d *appsv1.Deployment) bool {
	const hostname = "kubernetes.io/hostname"
	spec := &d.Spec.Template.Spec
	own := labels.Set(d.Spec.Template.Labels)
	for _, c := range spec.TopologySpreadConstraints {
		if c.TopologyKey == hostname && c.WhenUnsatisfiable == corev1.DoNotSchedule && selects(c.LabelSelector, own) {
			return true
		}
	}
	if a := spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if t.TopologyKey == hostname && selects(t.LabelSelector, own) {
				return true
			}
		}
	}
	return false
}
