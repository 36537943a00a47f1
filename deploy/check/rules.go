package check

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
