package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/store"
)

const backoffHelp = `  backoff   print the fleet backoff, then exit; backoff clear [--by NAME] ends it (after
            fixing the token, say), logged with who ran it: NAME, else $USER or the account
`

// backoffCommand runs `poller backoff`, which prints the fleet backoff, and
// `poller backoff clear [--by NAME]`, which ends it so that every poller asks
// GitHub again at its next tick, and logs to stderr who cleared what: NAME
// (for a `kubectl exec`, where the container's user says nothing), else the
// user running it, and the host.
func backoffCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, now func() time.Time) error {
	clear, by := false, ""
	switch {
	case len(args) == 0:
	case len(args) == 1 && args[0] == "clear":
		clear = true
	case len(args) == 3 && args[0] == "clear" && args[1] == "--by" && strings.TrimSpace(args[2]) != "":
		clear, by = true, strings.TrimSpace(args[2])
	default:
		return fmt.Errorf("backoff: got %q, want no argument, clear, or clear --by NAME", strings.Join(args, " "))
	}
	cfg, _, err := config.LoadPoller(getenv)
	if err != nil {
		return err
	}
	if cfg.RedisURL == "" {
		return fmt.Errorf("backoff: REDIS_URL is empty: there is no fleet backoff")
	}
	client, err := store.NewClient(cfg.RedisURL.Reveal(), store.WithTLS(cfg.RedisTLS.Config()))
	if err != nil {
		return err
	}
	defer client.Close()
	st := store.New(client, "")
	_, b, err := st.Status(ctx, nil)
	if err != nil {
		return fmt.Errorf("backoff: %w", err)
	}
	t := now()
	if !clear {
		fmt.Fprintln(stdout, backoffLine(b, t))
		return nil
	}
	if !b.Exists || b.Backoff.Until.IsZero() {
		fmt.Fprintln(stdout, "fleet backoff: none, nothing to clear")
		return nil
	}
	// Guarded: only the backoff shown here goes, not one that a poller
	// recorded since.
	cleared, err := st.ClearBackoff(ctx, b.Backoff)
	if err != nil {
		return fmt.Errorf("backoff clear: %w", err)
	}
	if !cleared {
		return fmt.Errorf("backoff clear: a poller changed the fleet backoff meanwhile; nothing cleared: read it again with `poller backoff`")
	}
	who, host := operator(getenv)
	if by != "" {
		who = by
	}
	log := cfg.Logger(stderr).With(zap.String("binary", "poller"))
	log.Warn("fleet backoff cleared",
		zap.String("user", who), zap.String("host", host),
		zap.Time("until", b.Backoff.Until), zap.Int("trouble", b.Backoff.Trouble), zap.String("set_by", b.By))
	_ = log.Sync()
	fmt.Fprintf(stdout, "fleet backoff cleared by %s@%s (it was %s); every poller asks GitHub again at its next tick\n",
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
