package main

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/logsafe"
	"github.com/storytold/craft-releases/pkg/redis/store"
)

// acceptRecheck is how often a poller that Redis refuses asks again.
const acceptRecheck = time.Second

// accepted reports, once the start-up load was tried, whether the poller may
// be ready: at once unless Redis refuses it for its configuration (a wrong
// password, missing permissions; store.AccessDenied). Such a poller would run
// standalone for good, asking GitHub alone and publishing nothing, so it
// stays unready, says why in one error line, and is ready once Redis accepts
// it, so that a rollout with a wrong password stalls with the old pollers
// coordinating. An outage (refused connections, timeouts) is no refusal: the
// poller is ready and runs standalone until Redis is back. It reports false
// when ctx ends first; a nil st (no Redis) is always accepted.
func accepted(ctx context.Context, st *store.Store, log *zap.Logger) bool {
	if st == nil {
		return true
	}
	said := false
	for {
		_, _, err := st.Status(ctx, nil)
		switch {
		case err == nil, !said && !store.AccessDenied(err):
			return true
		case !said:
			log.Error("redis refuses this poller, staying unready", logsafe.NamedError("err", err))
			said = true
		}
		t := time.NewTimer(acceptRecheck)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}
