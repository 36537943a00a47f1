package admin

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/logsafe"
	"github.com/storytold/craft-releases/pkg/redis/store"
)

// backoffArgs reads the arguments of `poller backoff`: none, clear, or
// clear --by NAME.
func backoffArgs(args []string) (clear bool, by string, err error) {
	switch {
	case len(args) == 0:
	case len(args) == 1 && args[0] == "clear":
		clear = true
	case len(args) == 3 && args[0] == "clear" && args[1] == "--by" && strings.TrimSpace(args[2]) != "":
		clear, by = true, strings.TrimSpace(args[2])
	default:
		err = fmt.Errorf("backoff: got %q, want no argument, clear, or clear --by NAME", strings.Join(args, " "))
	}
	return clear, by, err
}

func checkBackoff(args []string) error {
	_, _, err := backoffArgs(args)
	return err
}

// backoff runs `poller backoff`, which prints the fleet backoff, and
// `poller backoff clear [--by NAME]`, which ends it so that every poller asks
// GitHub again at its next tick, and logs to stderr who cleared what: NAME
// (for a `kubectl exec`, where the container's user says nothing), else the
// user running it, and the host.
func backoff(ctx context.Context, c *call) error {
	clear, by, err := backoffArgs(c.args)
	if err != nil {
		return err
	}
	_, b, err := c.store.Status(ctx, nil)
	if err != nil {
		return fmt.Errorf("backoff: %w", err)
	}
	t := c.clock.Now()
	if !clear {
		fmt.Fprintln(c.stdout, backoffLine(b, t))
		return nil
	}
	if !b.Exists || b.Backoff.Until.IsZero() {
		fmt.Fprintln(c.stdout, "fleet backoff: none, nothing to clear")
		return nil
	}
	// Guarded: only the backoff shown here goes, not one that a poller
	// recorded since.
	cleared, err := c.store.ClearBackoff(ctx, b.Backoff)
	if err != nil {
		return fmt.Errorf("backoff clear: %w", err)
	}
	if !cleared {
		return fmt.Errorf("backoff clear: a poller changed the fleet backoff meanwhile; nothing cleared: read it again with `poller backoff`")
	}
	who, host := operator(c.getenv)
	if by != "" {
		who = by
	}
	log := c.cfg.Logger(c.stderr).With(zap.String("binary", "poller"))
	log.Warn("fleet backoff cleared",
		logsafe.String("user", who), zap.String("host", host),
		zap.Time("until", b.Backoff.Until), zap.Int("trouble", b.Backoff.Trouble), logsafe.String("set_by", b.By))
	_ = log.Sync()
	fmt.Fprintf(c.stdout, "fleet backoff cleared by %s@%s (it was %s); every poller asks GitHub again at its next tick\n",
		who, host, backoffLine(b, t)[len("fleet backoff: "):])
	return nil
}

// backoffLine describes the fleet backoff b as of now, for people:
// "fleet backoff: none", "fleet backoff: ACTIVE for … more (until …), …" or
// "fleet backoff: expired … ago, …".
func backoffLine(b store.BackoffStatus, now time.Time) string {
	bo := b.Backoff
	switch {
	case !b.Exists || bo.Until.IsZero():
		return "fleet backoff: none"
	case bo.Active(now):
		return fmt.Sprintf("fleet backoff: ACTIVE for %s more (until %s), %d bad rounds in a row, set by %s",
			bo.Until.Sub(now).Round(time.Second), bo.Until.UTC().Format(time.RFC3339), bo.Trouble, orDash(shown(b.By)))
	default:
		return fmt.Sprintf("fleet backoff: expired %s ago, %d bad rounds in a row, set by %s",
			now.Sub(bo.Until).Round(time.Second), bo.Trouble, orDash(shown(b.By)))
	}
}

// operator is who runs the command: the user ($USER, else the account of
// the process's uid, else the uid) and the host.
func operator(getenv func(string) string) (name, host string) {
	name = getenv("USER")
	if name == "" {
		name = strconv.Itoa(os.Getuid())
		if u, err := user.Current(); err == nil && u.Username != "" {
			name = u.Username
		}
	}
	host, err := os.Hostname()
	if err != nil {
		host = "-"
	}
	return name, host
}
