// Package check renders the Kubernetes manifests in deploy/ with the
// kustomize Go API, the code behind `kubectl kustomize`, decodes every object
// strictly into its Kubernetes API type, and checks the result against what
// cmd/api and cmd/poller read and serve. It also checks the alerts, the
// Grafana dashboard and the Dockerfile. Its tests run in `task test`, offline
// once the modules are downloaded.
package check

import (
	"errors"
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Set holds the objects of one rendering, by kind, in the order kustomize
// emitted them.
type Set struct {
	Namespaces      []*corev1.Namespace
	ConfigMaps      []*corev1.ConfigMap
	Secrets         []*corev1.Secret
	Services        []*corev1.Service
	Deployments     []*appsv1.Deployment
	PDBs            []*policyv1.PodDisruptionBudget
	HPAs            []*autoscalingv2.HorizontalPodAutoscaler
	NetworkPolicies []*networkingv1.NetworkPolicy
	PodMonitors     []*monitoringv1.PodMonitor
	PrometheusRules []*monitoringv1.PrometheusRule
}

// DeepCopy returns a copy of s that shares no object with it, for a test to
// break without touching s.
func (s *Set) DeepCopy() *Set {
	return &Set{
		Namespaces:      copyAll(s.Namespaces, (*corev1.Namespace).DeepCopy),
		ConfigMaps:      copyAll(s.ConfigMaps, (*corev1.ConfigMap).DeepCopy),
		Secrets:         copyAll(s.Secrets, (*corev1.Secret).DeepCopy),
		Services:        copyAll(s.Services, (*corev1.Service).DeepCopy),
		Deployments:     copyAll(s.Deployments, (*appsv1.Deployment).DeepCopy),
		PDBs:            copyAll(s.PDBs, (*policyv1.PodDisruptionBudget).DeepCopy),
		HPAs:            copyAll(s.HPAs, (*autoscalingv2.HorizontalPodAutoscaler).DeepCopy),
		NetworkPolicies: copyAll(s.NetworkPolicies, (*networkingv1.NetworkPolicy).DeepCopy),
		PodMonitors:     copyAll(s.PodMonitors, (*monitoringv1.PodMonitor).DeepCopy),
		PrometheusRules: copyAll(s.PrometheusRules, (*monitoringv1.PrometheusRule).DeepCopy),
	}
}

func copyAll[T any](list []*T, deepCopy func(*T) *T) []*T {
	out := make([]*T, len(list))
	for i, obj := range list {
		out[i] = deepCopy(obj)
	}
	return out
}

// Render runs kustomize on the kustomization in dir, as `kubectl kustomize
// dir` does, and adds every object it emits to a new Set. It fails on
// anything kustomize refuses and on any object Add refuses. Renderings may
// run concurrently once kustomize has read its OpenAPI schema (a first
// rendering, or openapi.SchemaForResourceType, done alone).
func Render(dir string) (*Set, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", dir, err)
	}
	s := &Set{}
	for _, r := range m.Resources() {
		doc, err := r.AsYAML()
		if err != nil {
			return nil, fmt.Errorf("render %s: %s %s: %w", dir, r.GetKind(), r.GetName(), err)
		}
		if err := s.Add(doc); err != nil {
			return nil, fmt.Errorf("render %s: %s %s: %w", dir, r.GetKind(), r.GetName(), err)
		}
	}
	return s, nil
}

// Add decodes one YAML document into the Go type of its apiVersion and kind
// and appends it to s. Decoding is strict: an unknown or repeated field, a
// field name in the wrong case or a field of the wrong type is an error, and
// so is an apiVersion and kind missing from the table below, so that a new
// kind is checked before it ships.
func (s *Set) Add(doc []byte) error {
	var t metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &t); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	switch t.APIVersion + " " + t.Kind {
	case "v1 Namespace":
		return add(doc, &s.Namespaces)
	case "v1 ConfigMap":
		return add(doc, &s.ConfigMaps)
	case "v1 Secret":
		return add(doc, &s.Secrets)
	case "v1 Service":
		return add(doc, &s.Services)
	case "apps/v1 Deployment":
		return add(doc, &s.Deployments)
	case "policy/v1 PodDisruptionBudget":
		return add(doc, &s.PDBs)
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return add(doc, &s.HPAs)
	case "networking.k8s.io/v1 NetworkPolicy":
		return add(doc, &s.NetworkPolicies)
	case "monitoring.coreos.com/v1 PodMonitor":
		return add(doc, &s.PodMonitors)
	case "monitoring.coreos.com/v1 PrometheusRule":
		return add(doc, &s.PrometheusRules)
	}
	return fmt.Errorf("unknown kind %q of apiVersion %q: add it to Set.Add to have it checked", t.Kind, t.APIVersion)
}

// add decodes doc into a new T as the API server does: keys match field
// names case-sensitively, and every unknown or repeated field is an error.
func add[T any](doc []byte, list *[]*T) error {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	obj := new(T)
	strict, err := kjson.UnmarshalStrict(js, obj)
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if len(strict) > 0 {
		return fmt.Errorf("decode strictly: %w", errors.Join(strict...))
	}
	*list = append(*list, obj)
	return nil
}
