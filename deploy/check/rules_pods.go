package check

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/storytold/craft-releases/pkg/daemon"
)

// checkWorkloads: both binaries run, each from the service's image with the
// right command and no arguments (they read only the environment).
func checkWorkloads(s *Resolved) []string {
	ws, problems := s.containers, slices.Clone(s.unknown)
	seen := map[string]bool{}
	for _, w := range ws {
		if w.binary == "" {
			continue
		}
		seen[w.binary] = true
		if len(w.c.Command) != 1 || len(w.c.Args) != 0 {
			problems = append(problems, fmt.Sprintf("%s: command %q args %q: the %s takes no arguments, only environment variables", w, w.c.Command, w.c.Args, w.binary))
		}
	}
	for _, b := range []string{"api", "poller"} {
		if !seen[b] {
			problems = append(problems, fmt.Sprintf("no Deployment runs the %s", b))
		}
	}
	return problems
}

// checkProbes: liveness on /healthz and readiness on /readyz (a startup
// probe, if any, on /healthz), all by HTTP on the port the binary listens on
// (HTTP_ADDR), which the container declares.
func checkProbes(s *Resolved) []string {
	var problems []string
	for _, w := range s.binaries {
		if w.err != nil {
			continue // env-loads reports it
		}
		st := w.st
		for _, l := range []struct {
			addr string
			port int32
		}{{st.addr, st.port}, {st.metricsAddr, st.metricsPort}} {
			if !declares(w.c, l.port) {
				problems = append(problems, fmt.Sprintf("%s: listens on %s but declares no TCP containerPort %d", w, l.addr, l.port))
			}
		}
		probes := []struct {
			kind     string
			probe    *corev1.Probe
			path     string
			required bool
		}{
			{"liveness", w.c.LivenessProbe, daemon.HealthzPath, true},
			{"readiness", w.c.ReadinessProbe, daemon.ReadyzPath, true},
			{"startup", w.c.StartupProbe, daemon.HealthzPath, false},
		}
		for _, p := range probes {
			switch {
			case p.probe == nil && p.required:
				problems = append(problems, fmt.Sprintf("%s: has no %s probe", w, p.kind))
			case p.probe == nil:
			case p.probe.HTTPGet == nil:
				problems = append(problems, fmt.Sprintf("%s: %s probe is not an HTTP GET (the image has no shell)", w, p.kind))
			case p.probe.HTTPGet.Path != p.path:
				problems = append(problems, fmt.Sprintf("%s: %s probe asks %s, want %s", w, p.kind, p.probe.HTTPGet.Path, p.path))
			default:
				if port, ok := resolvePort(w.c, p.probe.HTTPGet.Port); !ok || port != st.port {
					problems = append(problems, fmt.Sprintf("%s: %s probe asks port %s, but the %s listens on %s", w, p.kind, p.probe.HTTPGet.Port.String(), w.binary, st.addr))
				}
			}
		}
	}
	return problems
}

// checkScrape: each pod of the service carries the Prometheus scrape
// annotations, pointing at the port the binary serves /metrics on (the API's
// METRICS_ADDR, the poller's HTTP_ADDR) and /metrics, and the labels the
// alerts read from its series: environment, and redundancy.
func checkScrape(s *Resolved) []string {
	var problems []string
	for _, w := range s.binaries {
		if w.err != nil {
			continue // env-loads reports it
		}
		st := w.st
		a := w.deploy.Spec.Template.Annotations
		want := map[string]string{
			"prometheus.io/scrape": "true",
			"prometheus.io/port":   fmt.Sprint(st.metricsPort),
			"prometheus.io/path":   daemon.MetricsPath,
		}
		for _, k := range slices.Sorted(maps.Keys(want)) {
			if a[k] != want[k] {
				problems = append(problems, fmt.Sprintf("%s: pod annotation %s is %q, want %q", w, k, a[k], want[k]))
			}
		}
		labels := w.deploy.Spec.Template.Labels
		if labels["environment"] == "" {
			problems = append(problems, fmt.Sprintf("%s: no pod label environment, which tells this overlay's series from another's on a shared Prometheus", w))
		}
		if r := labels["redundancy"]; r != "required" && r != "none" {
			problems = append(problems, fmt.Sprintf("%s: pod label redundancy is %q, want required (CraftReleasesRedundancyLost pages when one pod is left) or none (one pod by design)", w, r))
		}
	}
	return problems
}

// checkResources: every container requests and limits CPU and memory, and
// requests no more than its limit.
func checkResources(s *Resolved) []string {
	ws := s.containers
	var problems []string
	for _, w := range ws {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := w.c.Resources.Requests[r]
			lim, hasLim := w.c.Resources.Limits[r]
			switch {
			case !hasReq:
				problems = append(problems, fmt.Sprintf("%s: requests no %s", w, r))
			case !hasLim:
				problems = append(problems, fmt.Sprintf("%s: has no %s limit", w, r))
			case req.Cmp(lim) > 0:
				problems = append(problems, fmt.Sprintf("%s: requests %s %s, over its limit %s", w, req.String(), r, lim.String()))
			}
		}
	}
	return problems
}

// checkSecurity: every pod and container runs as non-root, with a read-only
// root filesystem, no privilege escalation, every capability dropped, the
// runtime's default seccomp profile, no service account token and no
// Service variables mixed into the environment.
func checkSecurity(s *Resolved) []string {
	ws := s.containers
	var problems []string
	bad := func(w workload, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s: ", w)+fmt.Sprintf(format, args...))
	}
	for _, w := range ws {
		pod := w.pod()
		psc := pod.SecurityContext
		if psc == nil {
			psc = &corev1.PodSecurityContext{}
		}
		csc := w.c.SecurityContext
		if csc == nil {
			csc = &corev1.SecurityContext{}
		}
		nonRoot := csc.RunAsNonRoot
		if nonRoot == nil {
			nonRoot = psc.RunAsNonRoot
		}
		if nonRoot == nil || !*nonRoot {
			bad(w, "runAsNonRoot is not true")
		}
		if (csc.RunAsUser != nil && *csc.RunAsUser == 0) || (csc.RunAsUser == nil && psc.RunAsUser != nil && *psc.RunAsUser == 0) {
			bad(w, "runs as user 0")
		}
		seccomp := csc.SeccompProfile
		if seccomp == nil {
			seccomp = psc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			bad(w, "seccompProfile is not RuntimeDefault")
		}
		if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
			bad(w, "allowPrivilegeEscalation is not false")
		}
		if csc.Privileged != nil && *csc.Privileged {
			bad(w, "is privileged")
		}
		if csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem {
			bad(w, "readOnlyRootFilesystem is not true")
		}
		if csc.Capabilities == nil || !slices.Contains(csc.Capabilities.Drop, "ALL") {
			bad(w, "does not drop ALL capabilities")
		} else if len(csc.Capabilities.Add) > 0 {
			bad(w, "adds capabilities %v", csc.Capabilities.Add)
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			bad(w, "automountServiceAccountToken is not false: nothing here calls the Kubernetes API")
		}
		if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
			bad(w, "enableServiceLinks is not false: Service variables would mix with the settings")
		}
		if pod.HostNetwork || pod.HostPID || pod.HostIPC {
			bad(w, "shares a host namespace")
		}
	}
	return problems
}

// checkGOMEMLIMIT: every container of the service sets GOMEMLIMIT from its
// memory limit (a resourceFieldRef on limits.memory, directly or through a
// variable it refers to), at 80 % to 100 % of that limit.
func checkGOMEMLIMIT(s *Resolved) []string {
	var problems []string
	for _, w := range s.binaries {
		vars := w.vars
		v, ok := vars["GOMEMLIMIT"]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: does not set GOMEMLIMIT", w))
			continue
		}
		fromLimit := v.from == "resource limits.memory"
		for _, e := range w.c.Env {
			if e.Name != "GOMEMLIMIT" {
				continue
			}
			for _, ref := range references(e.Value) {
				fromLimit = fromLimit || vars[ref].from == "resource limits.memory"
			}
		}
		if !fromLimit {
			problems = append(problems, fmt.Sprintf("%s: GOMEMLIMIT=%s is not taken from limits.memory, so it does not follow the limit", w, v.value))
		}
		limit, ok := w.c.Resources.Limits[corev1.ResourceMemory]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: GOMEMLIMIT without a memory limit", w))
			continue
		}
		n, err := parseGoMemLimit(v.value)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: the Go runtime would ignore GOMEMLIMIT=%s: %v", w, v.value, err))
			continue
		}
		if lim := limit.Value(); n > lim || n < lim/10*8 {
			problems = append(problems, fmt.Sprintf("%s: GOMEMLIMIT=%s is %d bytes, not within 80–100 %% of the memory limit %s (%d bytes)", w, v.value, n, limit.String(), lim))
		}
	}
	return problems
}

// parseGoMemLimit reads GOMEMLIMIT as the Go runtime does: a number of bytes
// with an optional unit B, KiB, MiB, GiB or TiB.
func parseGoMemLimit(s string) (int64, error) {
	units := []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}
	shift := uint(0)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, shift = rest, u.shift
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a whole number of bytes with an optional B, KiB, MiB, GiB or TiB", s)
	}
	if n > (1<<63-1)>>shift {
		return 0, fmt.Errorf("%q overflows", s)
	}
	return n << shift, nil
}

// checkShutdown: the grace period outlasts the preStop pause plus the
// binary's SHUTDOWN_TIMEOUT_SECS, and the API pauses before SIGTERM (with the
// kubelet's sleep: the image has no shell) so endpoints drain first.
func checkShutdown(s *Resolved) []string {
	var problems []string
	for _, w := range s.binaries {
		if w.err != nil {
			continue // env-loads reports it
		}
		st := w.st
		var pause time.Duration
		if l := w.c.Lifecycle; l != nil && l.PreStop != nil {
			switch {
			case l.PreStop.Sleep != nil:
				pause = time.Duration(l.PreStop.Sleep.Seconds) * time.Second
			case l.PreStop.Exec != nil:
				problems = append(problems, fmt.Sprintf("%s: preStop runs %q, but the image has no shell and no sleep: use lifecycle.preStop.sleep", w, l.PreStop.Exec.Command))
			default:
				problems = append(problems, fmt.Sprintf("%s: preStop is not a sleep; the binaries serve no preStop hook", w))
			}
		}
		if w.binary == "api" && pause <= 0 {
			problems = append(problems, fmt.Sprintf("%s: no preStop sleep: the pod would stop while endpoints still send it traffic", w))
		}
		grace := 30 * time.Second // the Kubernetes default
		if g := w.pod().TerminationGracePeriodSeconds; g != nil {
			grace = time.Duration(*g) * time.Second
		}
		if grace <= pause+st.shutdown {
			problems = append(problems, fmt.Sprintf("%s: terminationGracePeriodSeconds %s is not longer than the preStop sleep %s plus SHUTDOWN_TIMEOUT_SECS %s", w, grace, pause, st.shutdown))
		}
	}
	return problems
}

// checkImages: every container names an image with a tag or a digest, and
// not "latest", so a restart never changes what runs.
func checkImages(s *Resolved) []string {
	ws := s.containers
	var problems []string
	for _, w := range ws {
		ref := w.c.Image
		if strings.Contains(ref, "@") {
			continue
		}
		name := ref[strings.LastIndexByte(ref, '/')+1:]
		_, tag, ok := strings.Cut(name, ":")
		if !ok || tag == "" || tag == "latest" {
			problems = append(problems, fmt.Sprintf("%s: image %q has no fixed tag", w, ref))
		}
	}
	return problems
}
