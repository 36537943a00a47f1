package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/storytold/craft-releases/pkg/config"
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

// checkAppsConfig: the api and the poller take CRAFT_APPS_RELEASE_APPS, and
// CRAFT_APPS_RELEASE_PRERELEASE_APPS and CRAFT_APPS_RELEASE_TAG_PREFIXES when
// either sets them, from one and the same ConfigMap, so they can never
// disagree about the apps, their channels or their versions: a pod that shows
// a channel no poller fetches answers no-store, and a pod refuses every
// release a poller wrote under another tag prefix.
func checkAppsConfig(s *Resolved) []string {
	var problems []string
	for _, name := range []string{"CRAFT_APPS_RELEASE_APPS", "CRAFT_APPS_RELEASE_PRERELEASE_APPS", "CRAFT_APPS_RELEASE_TAG_PREFIXES"} {
		problems = append(problems, sharedVar(s, name, name == "CRAFT_APPS_RELEASE_APPS")...)
	}
	return problems
}

// sharedVar checks that every binary takes name from one and the same
// ConfigMap; a variable not required may be set by none.
func sharedVar(s *Resolved, name string, required bool) []string {
	var problems []string
	sources := map[string][]string{}
	set := 0
	for _, w := range s.binaries {
		if _, ok := w.vars[name]; ok {
			set++
		}
	}
	for _, w := range s.binaries {
		v, ok := w.vars[name]
		switch {
		case !ok && required:
			problems = append(problems, fmt.Sprintf("%s: does not set %s: it would serve the built-in list", w, name))
		case !ok && set > 0:
			problems = append(problems, fmt.Sprintf("%s: does not set %s, which another binary sets", w, name))
		case !ok:
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
