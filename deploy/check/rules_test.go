package check

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestEveryOverlayPassesEveryCheck(t *testing.T) {
	t.Parallel()
	for _, r := range renderings() {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			s := render(t, r.dir)
			for _, c := range Checks() {
				if problems := c.Run(Resolve(s)); len(problems) > 0 {
					t.Errorf("check %s:\n%s", c.Name, strings.Join(problems, "\n"))
				}
			}
		})
	}
}

// deployment returns the Deployment name of s or fails the test.
func deployment(t testing.TB, s *Set, name string) *appsv1.Deployment {
	t.Helper()
	return named(t, s.Deployments, "Deployment", name)
}

// named returns the object of kind called name among objects, or fails the test.
func named[T interface{ GetName() string }](t testing.TB, objects []T, kind, name string) T {
	t.Helper()
	i := slices.IndexFunc(objects, func(o T) bool { return o.GetName() == name })
	if i < 0 {
		t.Fatalf("no %s %s", kind, name)
	}
	return objects[i]
}

// configMap returns the generated ConfigMap whose name is prefix plus a
// hash, or fails the test.
func configMap(t testing.TB, s *Set, prefix string) *corev1.ConfigMap {
	t.Helper()
	for _, cm := range s.ConfigMaps {
		if rest, ok := strings.CutPrefix(cm.Name, prefix+"-"); ok && !strings.Contains(rest, "-") {
			return cm
		}
	}
	t.Fatalf("no ConfigMap %s-<hash>", prefix)
	return nil
}

func api(t testing.TB, s *Set) *corev1.Container {
	t.Helper()
	return &deployment(t, s, "craft-releases-api").Spec.Template.Spec.Containers[0]
}

func poller(t testing.TB, s *Set) *corev1.Container {
	t.Helper()
	return &deployment(t, s, "craft-releases-poller").Spec.Template.Spec.Containers[0]
}

// networkPolicy returns the NetworkPolicy name of s or fails the test.
func networkPolicy(t testing.TB, s *Set, name string) *networkingv1.NetworkPolicy {
	t.Helper()
	return named(t, s.NetworkPolicies, "NetworkPolicy", name)
}

// setEnv sets name to value in c's env, in place if it is there.
func setEnv(c *corev1.Container, name, value string) {
	for i := range c.Env {
		if c.Env[i].Name == name {
			c.Env[i] = corev1.EnvVar{Name: name, Value: value}
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
}

func removeEnv(c *corev1.Container, name string) {
	c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
}

func ptr[T any](v T) *T { return &v }

// TestChecksCatchBrokenManifests breaks the rendered production overlay in
// memory, one way per case, and wants the named check to say so.
func TestChecksCatchBrokenManifests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		check string
		brk   func(t testing.TB, s *Set)
		want  string // a part of one problem
	}{
		{"a misspelt variable", "env-known", func(t testing.TB, s *Set) {
			setEnv(poller(t, s), "CRAFT_APPS_RELEASE_POLL_INTERVAL", "60")
		}, "sets CRAFT_APPS_RELEASE_POLL_INTERVAL (from value), which the poller does not read"},
		{"an API-only key in the shared ConfigMap", "env-known", func(t testing.TB, s *Set) {
			configMap(t, s, "craft-releases").Data["CRAFT_APPS_HYDRATE_TIMEOUT_SECS"] = "10"
		}, "CRAFT_APPS_HYDRATE_TIMEOUT_SECS (from configmap craft-releases-"},
		{"a value the binary refuses", "env-loads", func(t testing.TB, s *Set) {
			configMap(t, s, "craft-releases").Data["LOG_LEVEL"] = "verbose"
		}, `LOG_LEVEL: "verbose" is not debug, info, warn or error`},
		{"a malformed app list", "env-loads", func(t testing.TB, s *Set) {
			configMap(t, s, "craft-releases").Data["CRAFT_APPS_RELEASE_APPS"] = "photocraft=PhotoCraft"
		}, "CRAFT_APPS_RELEASE_APPS"},
		{"an interval under the minimum", "env-loads", func(t testing.TB, s *Set) {
			configMap(t, s, "craft-releases-poller").Data["CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS"] = "30"
		}, "the poller would warn"},
		{"a ConfigMap that is not rendered", "env-loads", func(t testing.TB, s *Set) {
			api(t, s).EnvFrom[0].ConfigMapRef.Name = "craft-releases-typo"
		}, "envFrom ConfigMap craft-releases-typo is not in the rendering"},
		{"the API with its own app list", "apps-config", func(t testing.TB, s *Set) {
			own := configMap(t, s, "craft-releases").DeepCopy()
			own.Name = "craft-releases-api-apps"
			s.ConfigMaps = append(s.ConfigMaps, own)
			api(t, s).EnvFrom[0].ConfigMapRef.Name = own.Name
		}, "CRAFT_APPS_RELEASE_APPS comes from different ConfigMaps"},
		{"an app list written into one Deployment", "apps-config", func(t testing.TB, s *Set) {
			setEnv(poller(t, s), "CRAFT_APPS_RELEASE_APPS", "photocraft=PhotoCraft=storytold/photocraft")
		}, "takes CRAFT_APPS_RELEASE_APPS from value, not from the shared ConfigMap"},
		{"a pre-release channel on the pollers alone", "apps-config", func(t testing.TB, s *Set) {
			setEnv(poller(t, s), "CRAFT_APPS_RELEASE_PRERELEASE_APPS", "photocraft")
		}, "does not set CRAFT_APPS_RELEASE_PRERELEASE_APPS, which another binary sets"},
		{"a pre-release channel written into the Deployments", "apps-config", func(t testing.TB, s *Set) {
			setEnv(poller(t, s), "CRAFT_APPS_RELEASE_PRERELEASE_APPS", "photocraft")
			setEnv(api(t, s), "CRAFT_APPS_RELEASE_PRERELEASE_APPS", "photocraft")
		}, "takes CRAFT_APPS_RELEASE_PRERELEASE_APPS from value, not from the shared ConfigMap"},
		{"tag prefixes on the API pods alone", "apps-config", func(t testing.TB, s *Set) {
			setEnv(api(t, s), "CRAFT_APPS_RELEASE_TAG_PREFIXES", "artcraft-launcher=artcraft-v")
		}, "does not set CRAFT_APPS_RELEASE_TAG_PREFIXES, which another binary sets"},
		{"a liveness probe on the wrong path", "probes", func(t testing.TB, s *Set) {
			api(t, s).LivenessProbe.HTTPGet.Path = "/health"
		}, "liveness probe asks /health, want /healthz"},
		{"readiness on liveness's path", "probes", func(t testing.TB, s *Set) {
			poller(t, s).ReadinessProbe.HTTPGet.Path = "/healthz"
		}, "readiness probe asks /healthz, want /readyz"},
		{"a probe on another port", "probes", func(t testing.TB, s *Set) {
			api(t, s).ReadinessProbe.HTTPGet.Port = intstr.FromInt32(9090)
		}, "readiness probe asks port 9090, but the api listens on :8080"},
		{"HTTP_ADDR moved without the ports", "probes", func(t testing.TB, s *Set) {
			setEnv(poller(t, s), "HTTP_ADDR", ":9091")
		}, "listens on :9091 but declares no TCP containerPort 9091"},
		{"HTTP_ADDR left to its default", "probes", func(t testing.TB, s *Set) {
			removeEnv(poller(t, s), "HTTP_ADDR")
			poller(t, s).Ports[0].ContainerPort = 8080
		}, "listens on :9090 but declares no TCP containerPort 9090"},
		{"an exec probe", "probes", func(t testing.TB, s *Set) {
			api(t, s).LivenessProbe.ProbeHandler = corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
		}, "liveness probe is not an HTTP GET"},
		{"no readiness probe", "probes", func(t testing.TB, s *Set) {
			poller(t, s).ReadinessProbe = nil
		}, "has no readiness probe"},
		{"scraping the wrong port", "scrape", func(t testing.TB, s *Set) {
			deployment(t, s, "craft-releases-poller").Spec.Template.Annotations["prometheus.io/port"] = "8080"
		}, `pod annotation prometheus.io/port is "8080", want "9090"`},
		{"no cpu limit", "resources", func(t testing.TB, s *Set) {
			delete(poller(t, s).Resources.Limits, corev1.ResourceCPU)
		}, "has no cpu limit"},
		{"no memory request", "resources", func(t testing.TB, s *Set) {
			delete(api(t, s).Resources.Requests, corev1.ResourceMemory)
		}, "requests no memory"},
		{"a request over the limit", "resources", func(t testing.TB, s *Set) {
			api(t, s).Resources.Requests[corev1.ResourceCPU] = api(t, s).Resources.Limits[corev1.ResourceCPU]
			api(t, s).Resources.Limits[corev1.ResourceCPU] = poller(t, s).Resources.Requests[corev1.ResourceCPU]
		}, "requests 2 cpu, over its limit 50m"},
		{"a writable root filesystem", "security", func(t testing.TB, s *Set) {
			api(t, s).SecurityContext.ReadOnlyRootFilesystem = ptr(false)
		}, "readOnlyRootFilesystem is not true"},
		{"capabilities kept", "security", func(t testing.TB, s *Set) {
			poller(t, s).SecurityContext.Capabilities = nil
		}, "does not drop ALL capabilities"},
		{"a capability added", "security", func(t testing.TB, s *Set) {
			poller(t, s).SecurityContext.Capabilities.Add = []corev1.Capability{"NET_BIND_SERVICE"}
		}, "adds capabilities [NET_BIND_SERVICE]"},
		{"root allowed", "security", func(t testing.TB, s *Set) {
			api(t, s).SecurityContext.RunAsNonRoot = nil
			deployment(t, s, "craft-releases-api").Spec.Template.Spec.SecurityContext.RunAsNonRoot = nil
		}, "runAsNonRoot is not true"},
		{"user 0", "security", func(t testing.TB, s *Set) {
			api(t, s).SecurityContext.RunAsUser = ptr(int64(0))
		}, "runs as user 0"},
		{"no seccomp profile", "security", func(t testing.TB, s *Set) {
			poller(t, s).SecurityContext.SeccompProfile = nil
			deployment(t, s, "craft-releases-poller").Spec.Template.Spec.SecurityContext.SeccompProfile = nil
		}, "seccompProfile is not RuntimeDefault"},
		{"an unconfined container", "security", func(t testing.TB, s *Set) {
			poller(t, s).SecurityContext.SeccompProfile.Type = corev1.SeccompProfileTypeUnconfined
		}, "seccompProfile is not RuntimeDefault"},
		{"privilege escalation left to the default", "security", func(t testing.TB, s *Set) {
			api(t, s).SecurityContext.AllowPrivilegeEscalation = nil
		}, "allowPrivilegeEscalation is not false"},
		{"a service account token", "security", func(t testing.TB, s *Set) {
			deployment(t, s, "craft-releases-poller").Spec.Template.Spec.AutomountServiceAccountToken = nil
		}, "automountServiceAccountToken is not false"},
		{"a fixed GOMEMLIMIT", "gomemlimit", func(t testing.TB, s *Set) {
			setEnv(api(t, s), "GOMEMLIMIT", "120MiB")
		}, "GOMEMLIMIT=120MiB is not taken from limits.memory"},
		{"a GOMEMLIMIT the runtime ignores", "gomemlimit", func(t testing.TB, s *Set) {
			setEnv(api(t, s), "GOMEMLIMIT", "$(MEMORY_LIMIT_MIB)Mi")
		}, `the Go runtime would ignore GOMEMLIMIT=256Mi`},
		{"GOMEMLIMIT at the limit in MiB read as bytes", "gomemlimit", func(t testing.TB, s *Set) {
			setEnv(poller(t, s), "GOMEMLIMIT", "$(MEMORY_LIMIT_MIB)")
		}, "GOMEMLIMIT=128 is 128 bytes, not within 80–100 % of the memory limit 128Mi"},
		{"no GOMEMLIMIT", "gomemlimit", func(t testing.TB, s *Set) {
			removeEnv(poller(t, s), "GOMEMLIMIT")
		}, "does not set GOMEMLIMIT"},
		{"a grace period shorter than the drain", "shutdown", func(t testing.TB, s *Set) {
			deployment(t, s, "craft-releases-api").Spec.Template.Spec.TerminationGracePeriodSeconds = ptr(int64(25))
		}, "terminationGracePeriodSeconds 25s is not longer than the preStop sleep 10s plus SHUTDOWN_TIMEOUT_SECS 15s"},
		{"a longer shutdown timeout alone", "shutdown", func(t testing.TB, s *Set) {
			setEnv(poller(t, s), "SHUTDOWN_TIMEOUT_SECS", "30")
		}, "terminationGracePeriodSeconds 25s is not longer than the preStop sleep 0s plus SHUTDOWN_TIMEOUT_SECS 30s"},
		{"the default grace period", "shutdown", func(t testing.TB, s *Set) {
			deployment(t, s, "craft-releases-api").Spec.Template.Spec.TerminationGracePeriodSeconds = nil
			setEnv(api(t, s), "SHUTDOWN_TIMEOUT_SECS", "20")
		}, "terminationGracePeriodSeconds 30s is not longer than the preStop sleep 10s plus SHUTDOWN_TIMEOUT_SECS 20s"},
		{"a preStop exec of sleep", "shutdown", func(t testing.TB, s *Set) {
			api(t, s).Lifecycle.PreStop = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "10"}}}
		}, "the image has no shell and no sleep"},
		{"no preStop on the API", "shutdown", func(t testing.TB, s *Set) {
			api(t, s).Lifecycle = nil
		}, "no preStop sleep"},
		{"an optional Redis", "redis-url", func(t testing.TB, s *Set) {
			for _, e := range api(t, s).Env {
				if e.Name == "REDIS_URL" {
					e.ValueFrom.SecretKeyRef.Optional = ptr(true)
				}
			}
		}, "Deployment craft-releases-api container api: REDIS_URL's Secret key is optional"},
		{"a Redis URL written in", "redis-url", func(t testing.TB, s *Set) {
			setEnv(poller(t, s), "REDIS_URL", "redis://:hunter2@redis:6379")
		}, "takes REDIS_URL from value, not from a Secret"},
		{"no Redis for the API", "redis-url", func(t testing.TB, s *Set) {
			removeEnv(api(t, s), "REDIS_URL")
		}, "craft-releases-api container api: does not set REDIS_URL"},
		{"a required token", "token", func(t testing.TB, s *Set) {
			for _, e := range poller(t, s).Env {
				if e.Name == "CRAFT_APPS_RELEASE_GITHUB_TOKEN" {
					e.ValueFrom.SecretKeyRef.Optional = nil
				}
			}
		}, "is not optional"},
		{"a token written in", "token", func(t testing.TB, s *Set) {
			setEnv(poller(t, s), "CRAFT_APPS_RELEASE_GITHUB_TOKEN", "ghp_x")
		}, "takes CRAFT_APPS_RELEASE_GITHUB_TOKEN from value, not from a Secret"},
		{"the token given to the API", "token", func(t testing.TB, s *Set) {
			for _, e := range poller(t, s).Env {
				if e.Name == "CRAFT_APPS_RELEASE_GITHUB_TOKEN" {
					api(t, s).Env = append(api(t, s).Env, e)
				}
			}
		}, "the API never calls GitHub in split mode"},
		{"a webhook secret written in", "webhook-secret", func(t testing.TB, s *Set) {
			setEnv(api(t, s), "CRAFT_APPS_RELEASE_WEBHOOK_SECRET", "s3cret")
		}, "takes CRAFT_APPS_RELEASE_WEBHOOK_SECRET from value, not from a Secret"},
		{"a required webhook secret", "webhook-secret", func(t testing.TB, s *Set) {
			for _, e := range api(t, s).Env {
				if e.Name == "CRAFT_APPS_RELEASE_WEBHOOK_SECRET" {
					e.ValueFrom.SecretKeyRef.Optional = nil
				}
			}
		}, "the Secret key of CRAFT_APPS_RELEASE_WEBHOOK_SECRET is not optional"},
		{"the webhook secret given to the poller", "env-known", func(t testing.TB, s *Set) {
			for _, e := range api(t, s).Env {
				if e.Name == "CRAFT_APPS_RELEASE_WEBHOOK_SECRET" {
					poller(t, s).Env = append(poller(t, s).Env, e)
				}
			}
		}, "CRAFT_APPS_RELEASE_WEBHOOK_SECRET (from secret craft-releases-webhook), which the poller does not read"},
		{"the API let out to GitHub", "network", func(t testing.TB, s *Set) {
			for _, np := range s.NetworkPolicies {
				if np.Name == "craft-releases-api" {
					np.Spec.Egress = append(np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{
						Ports: []networkingv1.NetworkPolicyPort{{Port: ptr(intstr.FromInt32(443))}},
					})
				}
			}
		}, "let out [TCP/443 TCP/53 TCP/6379 UDP/53], want [TCP/53 TCP/6379 UDP/53]"},
		{"pollers open on every port", "network", func(t testing.TB, s *Set) {
			for _, np := range s.NetworkPolicies {
				if np.Name == "craft-releases-poller" {
					np.Spec.Ingress[0].Ports = nil
				}
			}
		}, "let in [any], want [TCP/9090]"},
		{"the API's ingress on another port", "network", func(t testing.TB, s *Set) {
			for _, np := range s.NetworkPolicies {
				if np.Name == "craft-releases-api" {
					np.Spec.Ingress[0].Ports[0].Port = ptr(intstr.FromInt32(80))
				}
			}
		}, "let in [TCP/80 TCP/9090], want [TCP/8080 TCP/9090]"},
		{"the API's endpoint open to anyone", "network", func(t testing.TB, s *Set) {
			networkPolicy(t, s, "craft-releases-api").Spec.Ingress[0].From = nil
		}, "NetworkPolicy craft-releases-api: lets anyone in to Deployment craft-releases-api container api on [TCP/8080]"},
		{"the API's endpoint open to every namespace", "network", func(t testing.TB, s *Set) {
			networkPolicy(t, s, "craft-releases-api").Spec.Ingress[0].From = []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}
		}, "a peer of Deployment craft-releases-api container api lets everyone in"},
		{"the API's endpoint open to the whole Internet", "network", func(t testing.TB, s *Set) {
			networkPolicy(t, s, "craft-releases-api").Spec.Ingress[0].From = []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}}}
		}, "lets everyone in"},
		{"the API's metrics open with the endpoint", "network", func(t testing.TB, s *Set) {
			np := networkPolicy(t, s, "craft-releases-api")
			np.Spec.Ingress[0].Ports = append(np.Spec.Ingress[0].Ports, networkingv1.NetworkPolicyPort{Port: ptr(intstr.FromInt32(9090))})
		}, "lets Deployment craft-releases-api container api's metrics port 9090 be reached from more than a namespace"},
		{"the pollers' metrics open to an IP block", "network", func(t testing.TB, s *Set) {
			networkPolicy(t, s, "craft-releases-poller").Spec.Ingress[0].From = []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}}}
		}, "metrics port 9090 be reached from more than a namespace"},
		{"the API's metrics on the public port", "scrape", func(t testing.TB, s *Set) {
			deployment(t, s, "craft-releases-api").Spec.Template.Annotations["prometheus.io/port"] = "8080"
		}, `pod annotation prometheus.io/port is "8080", want "9090"`},
		{"the API's metrics port undeclared", "probes", func(t testing.TB, s *Set) {
			api(t, s).Ports = api(t, s).Ports[:1]
		}, "listens on :9090 but declares no TCP containerPort 9090"},
		{"a Service exposing the metrics port", "availability", func(t testing.TB, s *Set) {
			s.Services[0].Spec.Ports = append(s.Services[0].Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9090, TargetPort: intstr.FromString("metrics")})
		}, "Service craft-releases-api: port 9090 targets metrics, but the api listens on :8080"},
		{"no policies", "network", func(t testing.TB, s *Set) {
			s.NetworkPolicies = nil
		}, "no NetworkPolicy isolates its pods"},
		{"one poller", "availability", func(t testing.TB, s *Set) {
			deployment(t, s, "craft-releases-poller").Spec.Replicas = ptr(int32(1))
		}, "craft-releases-poller: fewer than 2 replicas"},
		{"pollers free to share a node", "availability", func(t testing.TB, s *Set) {
			spec := &deployment(t, s, "craft-releases-poller").Spec.Template.Spec
			for i := range spec.TopologySpreadConstraints {
				spec.TopologySpreadConstraints[i].WhenUnsatisfiable = corev1.ScheduleAnyway
			}
		}, "nothing keeps two of its pods off one node"},
		{"replicas under an autoscaler", "availability", func(t testing.TB, s *Set) {
			deployment(t, s, "craft-releases-api").Spec.Replicas = ptr(int32(3))
		}, "sets spec.replicas"},
		{"no autoscaler", "availability", func(t testing.TB, s *Set) {
			s.HPAs = nil
		}, "no HorizontalPodAutoscaler scales it"},
		{"no disruption budget", "availability", func(t testing.TB, s *Set) {
			s.PDBs = s.PDBs[:1]
		}, "Deployment craft-releases-poller: no PodDisruptionBudget selects its pods"},
		{"a Service on the wrong port", "availability", func(t testing.TB, s *Set) {
			s.Services[0].Spec.Ports[0].TargetPort = intstr.FromInt32(9090)
		}, "targets 9090, but the api listens on :8080"},
		{"pods without an environment", "scrape", func(t testing.TB, s *Set) {
			delete(deployment(t, s, "craft-releases-api").Spec.Template.Labels, "environment")
		}, "no pod label environment"},
		{"pods that say nothing of redundancy", "scrape", func(t testing.TB, s *Set) {
			delete(deployment(t, s, "craft-releases-poller").Spec.Template.Labels, "redundancy")
		}, `pod label redundancy is ""`},
		{"a latest image", "images", func(t testing.TB, s *Set) {
			poller(t, s).Image = "craft-releases:latest"
		}, `image "craft-releases:latest" has no fixed tag`},
		{"the poller's subcommand as its command", "workloads", func(t testing.TB, s *Set) {
			poller(t, s).Args = []string{"status"}
		}, "the poller takes no arguments"},
		{"the image's default command", "workloads", func(t testing.TB, s *Set) {
			poller(t, s).Command = nil
		}, "want /usr/local/bin/api or /usr/local/bin/poller"},
	}
	checks := map[string]Check{}
	for _, c := range Checks() {
		checks[c.Name] = c
	}
	production := render(t, "../overlays/production")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, ok := checks[tt.check]
			if !ok {
				t.Fatalf("no check %q", tt.check)
			}
			s := production.DeepCopy()
			if problems := c.Run(Resolve(s)); len(problems) > 0 {
				t.Fatalf("check %s before breaking: %s", c.Name, strings.Join(problems, "; "))
			}
			tt.brk(t, s)
			problems := c.Run(Resolve(s))
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tt.want) }) {
				t.Errorf("check %s: got problems %q, want one containing %q", c.Name, problems, tt.want)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	t.Parallel()
	vars := map[string]variable{"A": {value: "1"}, "B": {value: "two"}}
	tests := []struct{ name, in, want string }{
		{"plain", "x", "x"},
		{"one reference", "$(A)000", "1000"},
		{"two references", "$(A)-$(B)", "1-two"},
		{"undefined stays", "$(C)", "$(C)"},
		{"escaped", "$$(A)", "$(A)"},
		{"unterminated", "$(A", "$(A"},
		{"lone dollar", "a$", "a$"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := expand(tt.in, vars); got != tt.want {
				t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestReferences(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     []string
	}{
		{"none", "abc", nil},
		{"one", "$(MEMORY_LIMIT_MIB)000000", []string{"MEMORY_LIMIT_MIB"}},
		{"two", "$(A):$(B)", []string{"A", "B"}},
		{"escaped", "$$(A)", nil},
		{"unterminated", "$(A", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := references(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("references(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseGoMemLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"128000000", 128000000, false},
		{"100MiB", 100 << 20, false},
		{"2GiB", 2 << 30, false},
		{"1KiB", 1024, false},
		{"5B", 5, false},
		{"1TiB", 1 << 40, false},
		{"128Mi", 0, true},
		{"128M", 0, true},
		{"-1", 0, true},
		{"", 0, true},
		{"9000000000TiB", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseGoMemLimit(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("parseGoMemLimit(%q) = %d, %v; want %d, error %t", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestDeepCopySharesNothing(t *testing.T) {
	t.Parallel()
	s := render(t, "testdata/monitoring")
	c := s.DeepCopy()
	deployment(t, c, "craft-releases-api").Spec.Template.Spec.Containers[0].Image = "changed"
	configMap(t, c, "craft-releases").Data["LOG_LEVEL"] = "changed"
	c.PrometheusRules[0].Spec.Groups[0].Name = "changed"
	c.PodMonitors[0].Name = "changed"
	got := []string{
		api(t, s).Image,
		configMap(t, s, "craft-releases").Data["LOG_LEVEL"],
		s.PrometheusRules[0].Spec.Groups[0].Name,
		s.PodMonitors[0].Name,
	}
	if slices.Contains(got, "changed") {
		t.Errorf("changing the copy changed the original: %q", got)
	}
	if len(c.Deployments) != len(s.Deployments) || len(c.NetworkPolicies) != len(s.NetworkPolicies) || len(c.Secrets) != len(s.Secrets) {
		t.Errorf("the copy lost objects")
	}
}

// TestProductionServesTheWebhook: production's API pods get the webhook
// secret from the Secret craft-releases-webhook, key secret
// (docs/operations.md, "GitHub webhook").
func TestProductionServesTheWebhook(t *testing.T) {
	t.Parallel()
	s := render(t, "../overlays/production")
	for _, e := range api(t, s).Env {
		if e.Name == "CRAFT_APPS_RELEASE_WEBHOOK_SECRET" {
			ref := e.ValueFrom.SecretKeyRef
			if ref == nil || ref.Name != "craft-releases-webhook" || ref.Key != "secret" {
				t.Errorf("CRAFT_APPS_RELEASE_WEBHOOK_SECRET comes from %+v, want Secret craft-releases-webhook, key secret", e.ValueFrom)
			}
			return
		}
	}
	t.Error("production's API does not get CRAFT_APPS_RELEASE_WEBHOOK_SECRET")
}
