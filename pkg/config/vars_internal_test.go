package config

import (
	"reflect"
	"slices"
	"testing"

	"github.com/caarlos0/env/v11"
)

// TestVariablesMatchEnv checks that the walk behind Names, Usage and the
// error messages sees the same variables, in the same order, as env itself.
func TestVariablesMatchEnv(t *testing.T) {
	tests := []struct {
		name string
		ptr  any
	}{
		{"api", &apiEnv{}},
		{"poller", &pollerEnv{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			params, err := env.GetFieldParamsWithOptions(tc.ptr, env.Options{Environment: map[string]string{}})
			if err != nil {
				t.Fatalf("env.GetFieldParams: %v", err)
			}
			var want []string
			for _, p := range params {
				want = append(want, p.Key)
			}
			vars := variables(reflect.TypeOf(tc.ptr).Elem())
			var got []string
			fields := make(map[string]bool)
			for _, v := range vars {
				got = append(got, v.name)
				if fields[v.field] {
					t.Errorf("field %s holds two variables; env's errors could not tell them apart", v.field)
				}
				fields[v.field] = true
				if v.def == "" || v.help == "" {
					t.Errorf("%s: default %q, help %q; want both for --help", v.name, v.def, v.help)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("variables:\n got %q\nwant %q (env's own walk)", got, want)
			}
		})
	}
}
