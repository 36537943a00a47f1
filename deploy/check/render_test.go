package check

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestMain reads kustomize's built-in OpenAPI schema before any test runs:
// kustomize reads it into a global on first use, and a rendering that runs
// meanwhile reads that global unguarded (a data race between the parallel
// tests' first renderings).
func TestMain(m *testing.M) {
	openapi.SchemaForResourceType(yaml.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"})
	os.Exit(m.Run())
}

// rendering is a kustomization the tests render: each overlay, and
// production with the optional monitoring component.
type rendering struct {
	name, dir   string
	deployments int // dev adds its Redis to the API and the pollers
}

func renderings() []rendering {
	return []rendering{
		{"dev", "../overlays/dev", 3},
		{"production", "../overlays/production", 2},
		{"production+monitoring", "testdata/monitoring", 2},
		{"production-sentinel", "../overlays/production-sentinel", 2},
		{"production-cluster-tls", "../overlays/production-cluster-tls", 2},
	}
}

// render renders dir or fails the test.
func render(t testing.TB, dir string) *Set {
	t.Helper()
	s, err := Render(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRenderEveryOverlay(t *testing.T) {
	t.Parallel()
	for _, r := range renderings() {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			s := render(t, r.dir)
			counts := []struct {
				kind      string
				got, want int
			}{
				{"Namespace", len(s.Namespaces), 1},
				{"Deployment", len(s.Deployments), r.deployments},
				{"HorizontalPodAutoscaler", len(s.HPAs), 1},
				{"PodDisruptionBudget", len(s.PDBs), 2},
				{"ConfigMap", len(s.ConfigMaps), 2},
			}
			for _, c := range counts {
				if c.got != c.want {
					t.Errorf("%s objects: got %d, want %d", c.kind, c.got, c.want)
				}
			}
			for _, ns := range s.Namespaces {
				if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
					t.Errorf("Namespace %s: pod security enforce level %q, want restricted", ns.Name, got)
				}
			}
		})
	}
}

func TestAddDecodesStrictly(t *testing.T) {
	t.Parallel()
	const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: x
spec:
  replicas: 2
  selector:
    matchLabels: {app: x}
  template:
    metadata:
      labels: {app: x}
    spec:
      containers:
        - name: x
          image: x:1
`
	tests := []struct {
		name string
		doc  string
		want string // a part of the error; "" for none
	}{
		{"valid", deployment, ""},
		{"unknown field", strings.Replace(deployment, "replicas: 2", "replicas: 2\n  replica: 2", 1), `unknown field "spec.replica"`},
		{"wrong case", strings.Replace(deployment, "replicas: 2", "Replicas: 2", 1), `unknown field "spec.Replicas"`},
		{"misspelt nested field", strings.Replace(deployment, "image: x:1", "image: x:1\n          imagePullPolice: Always", 1), `unknown field "spec.template.spec.containers[0].imagePullPolice"`},
		{"wrong type", strings.Replace(deployment, "replicas: 2", `replicas: "2"`, 1), "cannot unmarshal string"},
		{"list for a map", strings.Replace(deployment, "matchLabels: {app: x}", "matchLabels: [app]", 1), "cannot unmarshal array"},
		{"repeated field", strings.Replace(deployment, "replicas: 2", "replicas: 2\n  replicas: 3", 1), `"replicas" already set`},
		{"unknown kind", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n", `unknown kind "Pod"`},
		{"old apiVersion", strings.Replace(deployment, "apps/v1", "extensions/v1beta1", 1), `unknown kind "Deployment" of apiVersion "extensions/v1beta1"`},
		{"not YAML", "{", "decode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Set
			err := s.Add([]byte(tt.doc))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Add: got error %v, want none", err)
			case tt.want == "" && len(s.Deployments) != 1:
				t.Fatalf("Add: got %d Deployments, want 1", len(s.Deployments))
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Add: got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestRenderRefusesABrokenKustomization(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir+"/kustomization.yaml", "resources:\n  - missing.yaml\n")
	if _, err := Render(dir); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("Render: got error %v, want one naming missing.yaml", err)
	}
}

func writeFile(t testing.TB, name, text string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
