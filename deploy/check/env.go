package check

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// image is the repository name of the service's own image, as the base
// manifests spell it before an overlay sets the registry and tag.
const image = "craft-releases"

// workload is one container of a Deployment's pod template.
type workload struct {
	deploy *appsv1.Deployment
	c      *corev1.Container
	// binary is "api" or "poller" for a container that runs one of the
	// service's binaries, "" for any other container.
	binary string
}

func (w workload) String() string {
	return fmt.Sprintf("Deployment %s container %s", w.deploy.Name, w.c.Name)
}

func (w workload) pod() *corev1.PodSpec { return &w.deploy.Spec.Template.Spec }

// workloads lists every container of every Deployment, init containers
// included, in order. A container of the service's image whose command is
// neither binary is listed with binary "", and a problem says so.
func (s *Set) workloads() ([]workload, []string) {
	var ws []workload
	var problems []string
	for _, d := range s.Deployments {
		spec := &d.Spec.Template.Spec
		for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
			for i := range list {
				w := workload{deploy: d, c: &list[i]}
				if ourImage(w.c.Image) {
					w.binary = binaryOf(w.c.Command)
					if w.binary == "" {
						problems = append(problems, fmt.Sprintf("%s: runs image %s with command %q: want /usr/local/bin/api or /usr/local/bin/poller", w, w.c.Image, w.c.Command))
					}
				}
				ws = append(ws, w)
			}
		}
	}
	return ws, problems
}

// ourImage reports whether ref names the service's image, in any registry
// and with any tag or digest.
func ourImage(ref string) bool {
	ref, _, _ = strings.Cut(ref, "@")
	name := path.Base(ref)
	name, _, _ = strings.Cut(name, ":")
	return name == image
}

func binaryOf(command []string) string {
	if len(command) == 0 {
		return ""
	}
	switch command[0] {
	case "/usr/local/bin/api":
		return "api"
	case "/usr/local/bin/poller":
		return "poller"
	}
	return ""
}

// variable is one environment variable of a container as the kubelet sets it.
type variable struct {
	value string
	// from says where the value comes from: "value", "configmap <name>",
	// "secret <name>", "resource <field>" or "field <path>".
	from string
	// optional is the optional flag of a secretKeyRef or configMapKeyRef.
	optional bool
}

// secretStandIn is the value given to a variable taken from a Secret that
// the rendering does not hold (production's Secrets are made by hand), so
// that the settings still load. A Secret's real value is never needed.
func secretStandIn(name string) string {
	if name == "REDIS_URL" {
		return "redis://redis.invalid:6379"
	}
	return "stand-in"
}

// env resolves the environment a container starts with, as the kubelet
// builds it: envFrom in order, then env in order, each env value with its
// $(VAR) references to variables defined before it expanded. It returns the
// variables, their names in the order they were first set, and the problems
// that keep a variable from being known.
func (s *Set) env(w workload) (map[string]variable, []string, []string) {
	vars := map[string]variable{}
	var order, problems []string
	set := func(name string, v variable) {
		if _, ok := vars[name]; !ok {
			order = append(order, name)
		}
		vars[name] = v
	}
	for _, from := range w.c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm := s.configMap(from.ConfigMapRef.Name)
			if cm == nil {
				problems = append(problems, fmt.Sprintf("%s: envFrom ConfigMap %s is not in the rendering", w, from.ConfigMapRef.Name))
				continue
			}
			for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
				set(from.Prefix+k, variable{value: cm.Data[k], from: "configmap " + cm.Name})
			}
		default:
			problems = append(problems, fmt.Sprintf("%s: envFrom other than a ConfigMap of the rendering: its names cannot be checked", w))
		}
	}
	for _, e := range w.c.Env {
		v, problem := s.source(w, e, vars)
		if problem != "" {
			problems = append(problems, problem)
			continue
		}
		set(e.Name, v)
	}
	return vars, order, problems
}

// source works out the value of one env entry of w given the variables set
// before it, or says why it cannot.
func (s *Set) source(w workload, e corev1.EnvVar, before map[string]variable) (variable, string) {
	if e.ValueFrom == nil {
		return variable{value: expand(e.Value, before), from: "value"}, ""
	}
	switch vf := e.ValueFrom; {
	case vf.ConfigMapKeyRef != nil:
		ref := vf.ConfigMapKeyRef
		optional := ref.Optional != nil && *ref.Optional
		cm := s.configMap(ref.Name)
		if cm == nil {
			return variable{}, fmt.Sprintf("%s: %s: ConfigMap %s is not in the rendering", w, e.Name, ref.Name)
		}
		val, ok := cm.Data[ref.Key]
		if !ok {
			return variable{}, fmt.Sprintf("%s: %s: ConfigMap %s has no key %s", w, e.Name, ref.Name, ref.Key)
		}
		return variable{value: val, from: "configmap " + cm.Name, optional: optional}, ""
	case vf.SecretKeyRef != nil:
		ref := vf.SecretKeyRef
		v := variable{from: "secret " + ref.Name, optional: ref.Optional != nil && *ref.Optional}
		if sec := s.secret(ref.Name); sec != nil {
			val, ok := sec.Data[ref.Key]
			if !ok {
				return variable{}, fmt.Sprintf("%s: %s: Secret %s has no key %s", w, e.Name, ref.Name, ref.Key)
			}
			v.value = string(val)
			return v, ""
		}
		v.value = secretStandIn(e.Name)
		return v, ""
	case vf.ResourceFieldRef != nil:
		val, err := resourceField(w.c, vf.ResourceFieldRef)
		if err != nil {
			return variable{}, fmt.Sprintf("%s: %s: %v", w, e.Name, err)
		}
		return variable{value: val, from: "resource " + vf.ResourceFieldRef.Resource}, ""
	case vf.FieldRef != nil:
		return variable{value: "stand-in", from: "field " + vf.FieldRef.FieldPath}, ""
	}
	return variable{}, fmt.Sprintf("%s: %s: valueFrom names no source", w, e.Name)
}

// resourceField is the value the kubelet gives a resourceFieldRef: the
// container's request or limit divided by the divisor, rounded up. A limit
// that is not set would be the node's capacity, unknown here: an error.
func resourceField(c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	kind, name, ok := strings.Cut(ref.Resource, ".")
	var list corev1.ResourceList
	switch kind {
	case "limits":
		list = c.Resources.Limits
	case "requests":
		list = c.Resources.Requests
	default:
		ok = false
	}
	if !ok {
		return "", fmt.Errorf("resourceFieldRef %q is not limits.* or requests.*", ref.Resource)
	}
	q, set := list[corev1.ResourceName(name)]
	if !set {
		return "", fmt.Errorf("resourceFieldRef %s: the container sets no %s", ref.Resource, ref.Resource)
	}
	divisor := resource.MustParse("1")
	if !ref.Divisor.IsZero() {
		divisor = ref.Divisor
	}
	n, d := q.MilliValue(), divisor.MilliValue()
	return fmt.Sprint((n + d - 1) / d), nil
}

// expand replaces each $(NAME) in s with the value of NAME when it is
// defined, and $$ with $, as the kubelet does; an undefined reference stays
// as it is.
func expand(s string, vars map[string]variable) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				name := s[i+2 : i+2+end]
				if v, ok := vars[name]; ok {
					b.WriteString(v.value)
					i += 2 + end
					continue
				}
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// references returns the names that s refers to with $(NAME).
func references(s string) []string {
	var names []string
	for {
		start := strings.Index(s, "$(")
		if start < 0 {
			return names
		}
		if start > 0 && s[start-1] == '$' {
			s = s[start+2:]
			continue
		}
		end := strings.IndexByte(s[start+2:], ')')
		if end < 0 {
			return names
		}
		names = append(names, s[start+2:start+2+end])
		s = s[start+2+end+1:]
	}
}

func (s *Set) configMap(name string) *corev1.ConfigMap {
	for _, cm := range s.ConfigMaps {
		if cm.Name == name {
			return cm
		}
	}
	return nil
}

func (s *Set) secret(name string) *corev1.Secret {
	for _, sec := range s.Secrets {
		if sec.Name == name {
			return sec
		}
	}
	return nil
}
