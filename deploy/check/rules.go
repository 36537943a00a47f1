package check

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/mysql"
)

// runtimeVar reports whether name is a variable that the Go runtime reads
// rather than the binaries' configuration.
func runtimeVar(name string) bool {
	switch name {
	case "GOMEMLIMIT", "GOMAXPROCS", "GOGC", "GODEBUG":
		return true
	}
	return false
}

// wantEgress returns the ports the NetworkPolicies must let a binary's pods
// reach, as "PROTOCOL/port": Redis and DNS for both, GitHub's HTTPS for the
// poller only. Sentinel's port may be let out besides (sentinelPort).
// sentinelPort is Redis Sentinel's port, as wantEgress writes ports.
const sentinelPort = "TCP/26379"

func wantEgress(binary string) []string {
	ports := []string{"TCP/53", "TCP/6379", "UDP/53"}
	if binary == "poller" {
		ports = append(ports, "TCP/443")
	}
	slices.Sort(ports)
	return ports
}

// A Check is one rule the rendered manifests follow.
type Check struct {
	Name string
	// Run returns every problem it finds in s, each a sentence that names
	// the object; none when s follows the rule. A workload whose environment
	// does not resolve or load is env-loads' to report, once: the rules that
	// need its settings leave it out.
	Run func(s *Resolved) []string
}

// Checks returns every check of a rendered overlay, in the order they run.
func Checks() []Check {
	return []Check{
		{"workloads", checkWorkloads},
		{"env-known", checkEnvKnown},
		{"env-loads", checkEnvLoads},
		{"apps-config", checkAppsConfig},
		{"probes", checkProbes},
		{"scrape", checkScrape},
		{"resources", checkResources},
		{"security", checkSecurity},
		{"gomemlimit", checkGOMEMLIMIT},
		{"shutdown", checkShutdown},
		{"redis-url", checkRedisURL},
		{"redis-tls", checkRedisTLS},
		{"token", checkToken},
		{"webhook-secret", checkWebhookSecret},
		{"network", checkNetwork},
		{"availability", checkAvailability},
		{"images", checkImages},
	}
}

// ours returns the containers that run one of the binaries.
func (s *Set) ours() []workload {
	ws, _ := s.workloads()
	var out []workload
	for _, w := range ws {
		if w.binary != "" {
			out = append(out, w)
		}
	}
	return out
}

// Resolved is a rendering with each workload worked out once, for every
// check to share.
type Resolved struct {
	*Set
	containers []workload // every container, as workloads lists them
	unknown    []string   // workloads' problems: containers of the image that run neither binary
	binaries   []*binary  // the containers that run one of the binaries
}

// binary is a container that runs one of the binaries, with its environment
// and what the binary makes of it.
type binary struct {
	workload
	vars  map[string]variable // as the kubelet sets them
	order []string            // the names of vars in the order they were first set
	st    settings            // zero when err is set
	// err says why st is unknown: the environment does not resolve, or
	// the binary would not start with it.
	err error
}

// Resolve works out s's workloads: every container, and for each one that
// runs a binary its environment, loaded by the binary's own configuration
// code. s must not change while the result is in use.
func Resolve(s *Set) *Resolved {
	r := &Resolved{Set: s}
	r.containers, r.unknown = s.workloads()
	for _, w := range r.containers {
		if w.binary == "" {
			continue
		}
		b := &binary{workload: w}
		var problems []string
		b.vars, b.order, problems = s.env(w)
		if len(problems) > 0 {
			b.err = errors.New(strings.Join(problems, "; "))
		} else {
			b.st, b.err = settingsOf(b)
		}
		r.binaries = append(r.binaries, b)
	}
	return r
}

// settings is what a binary makes of a container's environment.
type settings struct {
	addr        string        // HTTP_ADDR
	port        int32         // its port
	metricsAddr string        // where /metrics is: METRICS_ADDR (api), HTTP_ADDR (poller)
	metricsPort int32         // its port
	shutdown    time.Duration // SHUTDOWN_TIMEOUT_SECS
	warnings    []string      // settings raised to their minimum
}

// settingsOf loads b's environment with the binary's own configuration
// code, so a value the binary would refuse at start-up fails here.
func settingsOf(b *binary) (settings, error) {
	vars, err := withTLSStandIns(b.vars)
	if err != nil {
		return settings{}, err
	}
	getenv := func(name string) string { return vars[name].value }
	var st settings
	switch b.binary {
	case "api":
		var cfg config.API
		cfg, st.warnings, err = config.LoadAPI(getenv)
		st.addr, st.metricsAddr, st.shutdown = cfg.HTTPAddr, cfg.MetricsAddr, cfg.ShutdownTimeout
	case "poller":
		var cfg config.Poller
		cfg, st.warnings, err = config.LoadPoller(getenv, mysql.DSN)
		st.addr, st.metricsAddr, st.shutdown = cfg.HTTPAddr, cfg.HTTPAddr, cfg.ShutdownTimeout
	default:
		return settings{}, fmt.Errorf("%s runs no binary of the service", b)
	}
	if err != nil {
		return settings{}, fmt.Errorf("%s: the %s would not start: %w", b, b.binary, err)
	}
	if st.port, err = numericPort(st.addr); err != nil {
		return settings{}, fmt.Errorf("%s: HTTP_ADDR %w", b, err)
	}
	if st.metricsPort, err = numericPort(st.metricsAddr); err != nil {
		return settings{}, fmt.Errorf("%s: METRICS_ADDR %w", b, err)
	}
	return st, nil
}

// numericPort is the port of a listen address that LoadAPI or LoadPoller
// checked, when it is a number.
func numericPort(addr string) (int32, error) {
	_, port, _ := net.SplitHostPort(addr)
	p, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q has no numeric port", addr)
	}
	return int32(p), nil
}

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

// checkEnvKnown: every variable a container of the service gets (env, and
// the keys of the ConfigMaps it takes with envFrom) is one its binary reads,
// one the Go runtime reads, or one another variable refers to as $(NAME).
func checkEnvKnown(s *Resolved) []string {
	var problems []string
	for _, w := range s.binaries {
		known := map[string]bool{}
		for _, n := range config.Names(w.binary) {
			known[n] = true
		}
		for _, e := range w.c.Env {
			for _, n := range references(e.Value) {
				known[n] = true
			}
		}
		vars, order := w.vars, w.order
		for _, name := range order {
			if !known[name] && !runtimeVar(name) {
				problems = append(problems, fmt.Sprintf("%s: sets %s (from %s), which the %s does not read", w, name, vars[name].from, w.binary))
			}
		}
	}
	return problems
}

// checkEnvLoads: every container's environment resolves (each ConfigMap,
// key and resource it names exists) and the binary's configuration code
// takes it without an error or a warning.
func checkEnvLoads(s *Resolved) []string {
	var problems []string
	for _, w := range s.binaries {
		if w.err != nil {
			problems = append(problems, w.err.Error())
			continue
		}
		for _, warning := range w.st.warnings {
			problems = append(problems, fmt.Sprintf("%s: the %s would warn: %s", w, w.binary, warning))
		}
	}
	return problems
}

// checkAppsConfig: the api and the poller take CRAFT_APPS_RELEASE_APPS from
// one and the same ConfigMap, so they can never disagree about the apps.
func checkAppsConfig(s *Resolved) []string {
	const name = "CRAFT_APPS_RELEASE_APPS"
	var problems []string
	sources := map[string][]string{}
	for _, w := range s.binaries {
		vars := w.vars
		v, ok := vars[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: does not set %s: it would serve the built-in list", w, name))
		case !strings.HasPrefix(v.from, "configmap "):
			problems = append(problems, fmt.Sprintf("%s: takes %s from %s, not from the shared ConfigMap", w, name, v.from))
		default:
			sources[v.from] = append(sources[v.from], w.String())
		}
	}
	if len(sources) > 1 {
		var parts []string
		for _, from := range slices.Sorted(maps.Keys(sources)) {
			parts = append(parts, fmt.Sprintf("%s from %s", strings.Join(sources[from], ", "), from))
		}
		problems = append(problems, fmt.Sprintf("%s comes from different ConfigMaps: %s", name, strings.Join(parts, "; ")))
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

// checkRedisURL: both binaries take REDIS_URL from a Secret key that is not
// optional. Without it an API pod would quietly run standalone and poll
// GitHub itself, the per-pod polling this service exists to end; and a URL
// written into a manifest would put the Redis password in git.
func checkRedisURL(s *Resolved) []string {
	var problems []string
	for _, w := range s.binaries {
		vars := w.vars
		v, ok := vars["REDIS_URL"]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: does not set REDIS_URL", w))
		case !strings.HasPrefix(v.from, "secret "):
			problems = append(problems, fmt.Sprintf("%s: takes REDIS_URL from %s, not from a Secret", w, v.from))
		case v.optional:
			problems = append(problems, fmt.Sprintf("%s: REDIS_URL's Secret key is optional: without it the %s would start without Redis", w, w.binary))
		}
	}
	return problems
}

// checkToken: the poller takes the GitHub token from a Secret key marked
// optional, so a missing Secret never blocks start-up; the API, which never
// calls GitHub in split mode, does not get it.
func checkToken(s *Resolved) []string {
	const name = "CRAFT_APPS_RELEASE_GITHUB_TOKEN"
	var problems []string
	for _, w := range s.binaries {
		vars := w.vars
		v, ok := vars[name]
		switch {
		case w.binary == "api" && ok:
			problems = append(problems, fmt.Sprintf("%s: gets %s, but the API never calls GitHub in split mode", w, name))
		case w.binary != "poller":
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: does not get %s", w, name))
		default:
			problems = append(problems, optionalSecret(w.workload, name, v)...)
		}
	}
	return problems
}

// optionalSecret says what is wrong with v, w's variable name, which must
// come from a Secret key marked optional.
func optionalSecret(w workload, name string, v variable) []string {
	switch {
	case !strings.HasPrefix(v.from, "secret "):
		return []string{fmt.Sprintf("%s: takes %s from %s, not from a Secret", w, name, v.from)}
	case !v.optional:
		return []string{fmt.Sprintf("%s: the Secret key of %s is not optional: a missing Secret would keep the pod from starting", w, name)}
	}
	return nil
}

// checkWebhookSecret: where the API gets CRAFT_APPS_RELEASE_WEBHOOK_SECRET,
// it takes it from a Secret key marked optional: a secret written into a
// manifest would be in git, and a missing Secret must only leave the webhook
// out (404), never keep the pods that serve launchers from starting. The
// pollers never read it (env-known).
func checkWebhookSecret(s *Resolved) []string {
	const name = "CRAFT_APPS_RELEASE_WEBHOOK_SECRET"
	var problems []string
	for _, w := range s.binaries {
		vars := w.vars
		if v, ok := vars[name]; ok {
			problems = append(problems, optionalSecret(w.workload, name, v)...)
		}
	}
	return problems
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
