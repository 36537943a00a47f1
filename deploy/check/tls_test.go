package check

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestRedisVariants: the Sentinel overlay lets both binaries out to the
// sentinels' port, and both variants give each binary a Redis user of its
// own (a Secret key each); the TLS variant mounts the CA from a Secret.
func TestRedisVariants(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"../overlays/production-sentinel", "../overlays/production-cluster-tls"} {
		s := render(t, dir)
		keys := map[string]string{}
		for _, w := range s.ours() {
			for _, e := range w.c.Env {
				if e.Name == "REDIS_URL" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					keys[w.binary] = e.ValueFrom.SecretKeyRef.Key
				}
			}
		}
		if keys["api"] != "api-url" || keys["poller"] != "poller-url" {
			t.Errorf("%s: REDIS_URL from the keys %v, want api-url and poller-url", dir, keys)
		}
	}
	s := render(t, "../overlays/production-sentinel")
	for _, name := range []string{"craft-releases-api", "craft-releases-poller"} {
		var ports []int32
		for _, r := range networkPolicy(t, s, name).Spec.Egress {
			for _, p := range r.Ports {
				ports = append(ports, p.Port.IntVal)
			}
		}
		if !slices.Contains(ports, 26379) {
			t.Errorf("NetworkPolicy %s lets out %v, want the sentinels' 26379 too", name, ports)
		}
	}
	tls := render(t, "../overlays/production-cluster-tls")
	for _, c := range []*corev1.Container{api(t, tls), poller(t, tls)} {
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "REDIS_TLS_CA_FILE" && e.Value == "/etc/redis-ca/ca.crt" }) {
			t.Errorf("container %s: no REDIS_TLS_CA_FILE=/etc/redis-ca/ca.crt", c.Name)
		}
	}
}

func TestRedisTLSCatchesBrokenMounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		brk  func(t testing.TB, s *Set)
		want string
	}{
		{"mount not read-only", func(t testing.TB, s *Set) { api(t, s).VolumeMounts[0].ReadOnly = false }, "not read-only"},
		{"file outside the mount", func(t testing.TB, s *Set) { setEnv(poller(t, s), "REDIS_TLS_CA_FILE", "/etc/ssl/redis.pem") }, "in no volume mount"},
		{"relative path", func(t testing.TB, s *Set) { setEnv(poller(t, s), "REDIS_TLS_CA_FILE", "ca.crt") }, "not an absolute path"},
		{"not among the items", func(t testing.TB, s *Set) { setEnv(api(t, s), "REDIS_TLS_CA_FILE", "/etc/redis-ca/other.crt") }, "not among the items"},
		{"optional Secret", func(t testing.TB, s *Set) {
			optional := true
			deployment(t, s, "craft-releases-api").Spec.Template.Spec.Volumes[0].Secret.Optional = &optional
		}, "Secret is optional"},
		{"not a Secret", func(t testing.TB, s *Set) {
			deployment(t, s, "craft-releases-api").Spec.Template.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
		}, "not a Secret"},
	}
	base := render(t, "../overlays/production-cluster-tls")
	if problems := checkRedisTLS(Resolve(base)); len(problems) > 0 {
		t.Fatalf("before breaking: %v", problems)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base.DeepCopy()
			tt.brk(t, s)
			problems := checkRedisTLS(Resolve(s))
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tt.want) }) {
				t.Errorf("got problems %q, want one containing %q", problems, tt.want)
			}
		})
	}
}
