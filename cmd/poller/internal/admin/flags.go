package admin

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"
)

func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// The errors are returned; the usage is in --help.
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses args into fs and refuses any argument left over.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return fmt.Errorf("%s: the flags are listed by poller --help", fs.Name())
	} else if err != nil {
		// A time flag's own error names it as it is typed; the flag
		// package's would say "invalid value … for flag -end".
		fs.VisitAll(func(f *flag.Flag) {
			if v, ok := f.Value.(*timeValue); ok && v.err != nil {
				err = v.err
			}
		})
		return fmt.Errorf("%s: %w", fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q (values go after flags: --title \"…\")", fs.Name(), fs.Arg(0))
	}
	return nil
}

// timeValue is a flag holding an RFC 3339 time. The zero time is refused:
// it is how the rows say "none", which leaving the flag out already says.
type timeValue struct {
	name string
	t    time.Time
	err  error // why the last Set failed, naming the flag
}

func timeFlag(fs *flag.FlagSet, name, usage string) *timeValue {
	v := &timeValue{name: name}
	fs.Var(v, name, usage)
	return v
}

func (v *timeValue) String() string {
	if v == nil || v.t.IsZero() {
		return ""
	}
	return v.t.Format(time.RFC3339)
}

func (v *timeValue) Set(s string) error {
	t, err := time.Parse(time.RFC3339, s)
	switch {
	case err != nil:
		v.err = fmt.Errorf("--%s %q is not an RFC 3339 time such as 2026-10-10T22:00:00Z", v.name, s)
	case t.IsZero():
		v.err = fmt.Errorf("--%s %q is the zero time, which means none: leave --%s out instead", v.name, s, v.name)
	default:
		v.t = t
		return nil
	}
	return v.err
}

// when shows a time of a listing, "-" for none.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
