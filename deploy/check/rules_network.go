package check

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// sentinelPort is Redis Sentinel's port, as wantEgress writes ports.
const sentinelPort = "TCP/26379"

// wantEgress returns the ports the NetworkPolicies must let a binary's pods
// reach, as "PROTOCOL/port": Redis and DNS for both, GitHub's HTTPS for the
// poller only. Sentinel's port may be let out besides (sentinelPort).
func wantEgress(binary string) []string {
	ports := []string{"TCP/53", "TCP/6379", "UDP/53"}
	if binary == "poller" {
		ports = append(ports, "TCP/443")
	}
	slices.Sort(ports)
	return ports
}

// checkNetwork: the NetworkPolicies that select a pod of the service isolate
// it both ways, let in only the ports its binary listens on, and let out only
// Redis and DNS (and GitHub's HTTPS for the poller). No rule lets in every
// source: the public port only from the peers it names, the metrics port
// only from namespaces named by kubernetes.io/metadata.name (the monitoring
// namespace), never by an IP block.
func checkNetwork(s *Resolved) []string {
	var problems []string
	for _, w := range s.binaries {
		if w.err != nil {
			continue // env-loads reports it
		}
		st := w.st
		podLabels := labels.Set(w.deploy.Spec.Template.Labels)
		var isolatedIn, isolatedOut bool
		in, out := map[string]bool{}, map[string]bool{}
		for _, np := range s.NetworkPolicies {
			if !selects(&np.Spec.PodSelector, podLabels) {
				continue
			}
			types := np.Spec.PolicyTypes
			if len(types) == 0 {
				types = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
				if len(np.Spec.Egress) > 0 {
					types = append(types, networkingv1.PolicyTypeEgress)
				}
			}
			if slices.Contains(types, networkingv1.PolicyTypeIngress) {
				isolatedIn = true
				for _, r := range np.Spec.Ingress {
					addPorts(in, w.c, r.Ports)
					problems = append(problems, checkPeers(np.Name, w.workload, r, st)...)
				}
			}
			if slices.Contains(types, networkingv1.PolicyTypeEgress) {
				isolatedOut = true
				for _, r := range np.Spec.Egress {
					addPorts(out, w.c, r.Ports)
				}
			}
		}
		if !isolatedIn || !isolatedOut {
			problems = append(problems, fmt.Sprintf("%s: no NetworkPolicy isolates its pods for both ingress and egress", w))
			continue
		}
		wantIn := []string{fmt.Sprintf("TCP/%d", st.port), fmt.Sprintf("TCP/%d", st.metricsPort)}
		slices.Sort(wantIn)
		if got, want := slices.Sorted(maps.Keys(in)), slices.Compact(wantIn); !slices.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("%s: NetworkPolicies let in %v, want %v", w, got, want))
		}
		// An overlay on Sentinel (components/redis-sentinel) lets out the
		// sentinels' port too.
		delete(out, sentinelPort)
		if got, want := slices.Sorted(maps.Keys(out)), wantEgress(w.binary); !slices.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("%s: NetworkPolicies let out %v, want %v", w, got, want))
		}
	}
	return problems
}

// checkPeers checks who an ingress rule of policy lets in: somebody, never
// everybody, and on the metrics port only whole namespaces named by
// kubernetes.io/metadata.name.
func checkPeers(policy string, w workload, r networkingv1.NetworkPolicyIngressRule, st settings) []string {
	ports := map[string]bool{}
	addPorts(ports, w.c, r.Ports)
	metrics := ports[fmt.Sprintf("TCP/%d", st.metricsPort)] || ports["any"] || ports["TCP/any"]
	if len(r.From) == 0 {
		return []string{fmt.Sprintf("NetworkPolicy %s: lets anyone in to %s on %v; name where the traffic comes from", policy, w, slices.Sorted(maps.Keys(ports)))}
	}
	var problems []string
	for _, peer := range r.From {
		if everyone(peer) {
			problems = append(problems, fmt.Sprintf("NetworkPolicy %s: a peer of %s lets everyone in", policy, w))
		}
		if metrics && (peer.IPBlock != nil || peer.NamespaceSelector == nil || peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "") {
			problems = append(problems, fmt.Sprintf("NetworkPolicy %s: lets %s's metrics port %d be reached from more than a namespace named by kubernetes.io/metadata.name", policy, w, st.metricsPort))
		}
	}
	return problems
}

// everyone reports whether a peer admits every source: an IP block of the
// whole address space, or every pod of every namespace.
func everyone(p networkingv1.NetworkPolicyPeer) bool {
	if p.IPBlock != nil {
		return (p.IPBlock.CIDR == "0.0.0.0/0" || p.IPBlock.CIDR == "::/0") && len(p.IPBlock.Except) == 0
	}
	empty := func(sel *metav1.LabelSelector) bool {
		return sel != nil && len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0
	}
	return empty(p.NamespaceSelector) && (p.PodSelector == nil || empty(p.PodSelector))
}

// selects reports whether sel selects a pod with the given labels; a nil
// selector selects nothing, an empty one everything.
func selects(sel *metav1.LabelSelector, set labels.Set) bool {
	if sel == nil {
		return false
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && selector.Matches(set)
}

// declares reports whether c declares the TCP containerPort port.
func declares(c *corev1.Container, port int32) bool {
	return slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool {
		return p.ContainerPort == port && (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP)
	})
}

// resolvePort turns a port number or a port name of c into a number.
func resolvePort(c *corev1.Container, p intstr.IntOrString) (int32, bool) {
	if p.Type == intstr.Int {
		return p.IntVal, p.IntVal > 0
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

// addPorts adds each NetworkPolicy port to set as "PROTOCOL/port", "any"
// when the rule names no port (it opens every port).
func addPorts(set map[string]bool, c *corev1.Container, ports []networkingv1.NetworkPolicyPort) {
	if len(ports) == 0 {
		set["any"] = true
		return
	}
	for _, p := range ports {
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		switch {
		case p.Port == nil:
			set[string(proto)+"/any"] = true
		case p.EndPort != nil:
			set[fmt.Sprintf("%s/%d-%d", proto, p.Port.IntVal, *p.EndPort)] = true
		default:
			n, ok := resolvePort(c, *p.Port)
			if !ok {
				set[string(proto)+"/"+p.Port.String()+"?"] = true
				continue
			}
			set[fmt.Sprintf("%s/%d", proto, n)] = true
		}
	}
}
