package admin

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/storytold/craft-releases/pkg/logsafe"
	"github.com/storytold/craft-releases/pkg/release"
)

// status prints every configured app's shared entry (and its pre-release
// entry's, after it, when it has the channel, and its history entry's when
// there is one: only apps with decisions have) and the fleet backoff as
// a table an SRE reads at a glance. What came from outside (a tag, an ETag,
// a writer's name, all read from Redis) is shown by shown, so that no value
// can move the cursor, retitle the terminal or break the columns.
func status(ctx context.Context, c *call) error {
	apps, backoff, err := c.store.Status(ctx, release.Keys(c.cfg.Entries()))
	if err != nil {
		return err
	}
	t := c.clock.Now()
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "APP\tTAG\tFETCHED\tETAG\tCLAIMED\tFAILURES\tLAST FAILURE\tBY\tEXPIRES IN")
	for _, a := range apps {
		_, ch := release.AppOf(a.App)
		if !a.Exists && ch == release.HistoryChannel {
			continue
		}
		if !a.Exists {
			fmt.Fprintf(tw, "%s\t(no entry)\t-\t-\t-\t-\t-\t-\t-\n", shown(a.App))
			continue
		}
		e := a.Entry
		tag := "-"
		switch {
		case e.Release != nil:
			tag = shown(e.Release.Tag)
		case e.History != nil:
			tag = fmt.Sprintf("(%d releases)", len(e.History.Releases))
		case e.Fetched():
			tag = "(no release)"
		case a.Version != "1":
			tag = fmt.Sprintf("(format v=%q: unreadable)", a.Version)
		}
		failures, failed := "0", "-"
		if e.Failing() {
			failures, failed = fmt.Sprint(e.Failures), ago(t, e.FailedAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			shown(a.App), tag, ago(t, e.FetchedAt), orDash(shown(e.ETag)), ago(t, e.ClaimedAt),
			failures, failed, orDash(shown(a.By)), ttl(a.TTL))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, "\n"+backoffLine(backoff, t))
	return nil
}

// ago is how long before now t was, "-" for never, "in …" for a clock ahead.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		return "in " + (-d).String()
	}
	return d.String() + " ago"
}

func ttl(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return d.Round(time.Minute).String()
}

// shown is how a table shows a value that came from outside: as
// logsafe.Quote prints it, and quoted as well when it holds a space, so that
// control sequences, bidirectional overrides, tabs, newlines and spaces show
// as escapes and neither act nor break the columns.
func shown(s string) string {
	if strings.Contains(s, " ") {
		return strconv.QuoteToASCII(s)
	}
	return logsafe.Quote(s)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
