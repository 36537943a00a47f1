package check

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/mysql"
)

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
