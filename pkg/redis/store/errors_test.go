package store

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/redistest"
)

func TestRefusesScript(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msg  string
		want bool
	}{
		// Redis refusing the script itself.
		{"no @scripting, 7.0", "NOPERM this user has no permissions to run the 'evalsha' command", true},
		{"no @scripting, eval", "NOPERM this user has no permissions to run the 'eval' command", true},
		{"no @scripting, 6.2", "NOPERM this user has no permissions to run the 'evalsha' command or its subcommand", true},
		{"no @scripting, 7.2", "NOPERM User poller has no permissions to run the 'evalsha' command", true},
		{"evalsha renamed away, 7.0", "ERR unknown command 'EVALSHA', with args beginning with: 'd58045f9f1a742fab0f6a20d7d044f11bfbd6127' '1' ", true},
		{"eval renamed away, 7.0", "ERR unknown command 'EVAL', with args beginning with: 'local key = KEYS[1]' '1' ", true},
		{"evalsha renamed away, 6.0", "ERR unknown command `EVALSHA`, with args beginning with: `d58045f9`, `1`, ", true},
		{"evalsha unknown, 5.0", "ERR unknown command 'evalsha'", true},
		// rueidis reports ERR errors without their code.
		{"evalsha renamed away, as rueidis says it", "unknown command 'EVALSHA', with args beginning with: '629acaa8e4eb02d7faae2a3ac99b3fb6275d2828' '1' ", true},
		{"eval renamed away, as rueidis says it", "unknown command 'EVAL', with args beginning with: '-- The guarded write' '1' ", true},

		// Ordinary failures: scripts run, or Redis cannot serve at all.
		{"key not allowed", "NOPERM this user has no permissions to access one of the keys used as arguments", false},
		{"hset not allowed in the script", "ERR The user executing the script can't run this command or subcommand script: d58045f9f1a742fab0f6a20d7d044f11bfbd6127, on @user_script:1.", false},
		{"hset not allowed", "NOPERM this user has no permissions to run the 'hset' command", false},
		{"out of memory", "OOM command not allowed when used memory > 'maxmemory'.", false},
		{"out of memory in the script", "OOM command not allowed when used memory > 'maxmemory'. script: ff967d0ae0e68b4f9e360fa91c54598bc25ad9b6, on @user_script:1.", false},
		{"busy", "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.", false},
		{"read-only replica", "READONLY You can't write against a read only replica.", false},
		{"loading", "LOADING Redis is loading the dataset in memory", false},
		{"master down", "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.", false},
		{"no script", "NOSCRIPT No matching script. Please use EVAL.", false},
		{"wrong type in the script", "WRONGTYPE Operation against a key holding the wrong kind of value script: d428573a4356bc6caa149dc925b0f2dba21022c7, on @user_script:1.", false},
		{"script error", "ERR user_script:12: Script attempted to access nonexistent global variable 'eval' script: d58045f9, on @user_script:12.", false},
		{"another unknown command", "ERR unknown command 'FOO', with args beginning with: ", false},
		{"hset not allowed in the script, as rueidis says it", "The user executing the script can't run this command or subcommand script: 629acaa8e4eb02d7faae2a3ac99b3fb6275d2828, on @user_script:103.", false},
		{"script error, as rueidis says it", "user_script:1: Script attempted to access nonexistent global variable 'evaluate' script: 629acaa8, on @user_script:1.", false},
		{"cluster down", "CLUSTERDOWN The cluster is down", false},
		{"moved", "MOVED 3999 127.0.0.1:6381", false},
	}
	for _, tt := range tests {
		if got := refusesScript(tt.msg); got != tt.want {
			t.Errorf("%s: refusesScript(%q) = %v, want %v", tt.name, tt.msg, got, tt.want)
		}
	}

	others := []struct {
		name string
		err  error
	}{
		{"timeout", context.DeadlineExceeded},
		{"i/o timeout", os.ErrDeadlineExceeded},
		{"closed", io.EOF},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}},
		{"wrapped", errors.New("NOPERM this user has no permissions to run the 'evalsha' command")},
	}
	for _, tt := range others {
		if scriptRefused(tt.err) {
			t.Errorf("%s: scriptRefused(%v) = true, want false: only a Redis error refuses", tt.name, tt.err)
		}
	}
}

// TestScriptRefusal runs a write against Redis servers that refuse scripts,
// and against servers that fail in other ways: only the first kind switches
// the Store to WATCH/MULTI/EXEC.
func TestScriptRefusal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string                    // redis-server arguments
		user     []string                    // ACL rules of the user "poller"; nil: the default user
		breakIt  func(srv *redistest.Server) // after a first write went through
		wantErr  bool
		wantMode WriteMode
	}{
		{name: "no @scripting", user: []string{"~*", "&*", "+@all", "-@scripting"}, wantMode: ModeWatch},
		{name: "scripts renamed away", args: []string{"--rename-command", "EVALSHA", "", "--rename-command", "EVAL", ""}, wantMode: ModeWatch},
		{name: "evalsha renamed away", args: []string{"--rename-command", "EVALSHA", ""}, wantMode: ModeWatch},
		{name: "stopped", breakIt: func(srv *redistest.Server) { srv.Stop() }, wantErr: true, wantMode: ModeScript},
		{name: "out of memory", breakIt: func(srv *redistest.Server) { srv.MustDo("CONFIG", "SET", "maxmemory", "1") }, wantErr: true, wantMode: ModeScript},
		{name: "read-only replica", breakIt: func(srv *redistest.Server) { srv.MustDo("REPLICAOF", "127.0.0.1", "1") }, wantErr: true, wantMode: ModeScript},
		{name: "hset not allowed in scripts", user: []string{"~*", "&*", "+@all", "-hset"}, wantErr: true, wantMode: ModeScript},
		{name: "key not allowed", user: []string{"~other:*", "&*", "+@all"}, wantErr: true, wantMode: ModeScript},
		{name: "hset not allowed in transactions", user: []string{"~*", "&*", "+@all", "-@scripting", "-hset"}, wantErr: true, wantMode: ModeWatch},
	}
	const app = "photocraft"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t, tt.args...)
			url := srv.URL()
			if tt.user != nil {
				url = userURL(t, srv, "poller", tt.user...)
			}
			log, logs := observed()
			s := newStore(t, withTimeout(url, 2*time.Second), WithLogger(log))
			ctx := context.Background()
			when := at("12:00")
			if tt.breakIt != nil {
				wrote(t)(s.PutFetch(ctx, app, fetch(when, "e", nil)))
				tt.breakIt(srv)
				when = when.Add(time.Minute)
			}
			ok, err := s.PutFetch(ctx, app, fetch(when, "e", nil))
			if (err != nil) != tt.wantErr || ok == tt.wantErr {
				t.Errorf("PutFetch = %v, %v; want written %v, error %v", ok, err, !tt.wantErr, tt.wantErr)
			}
			if got := s.Mode(); got != tt.wantMode {
				t.Errorf("Mode() = %v, want %v", got, tt.wantMode)
			}
			// One more write: the switch is announced once, not per write.
			_, _ = s.PutFetch(ctx, app, fetch(when.Add(time.Minute), "e", nil))
			if got, wantWarnings := logs.FilterMessageSnippet("watch/multi/exec").Len(), map[bool]int{true: 1}[tt.wantMode == ModeWatch]; got != wantWarnings {
				t.Errorf("got %d warnings about the switch, want %d", got, wantWarnings)
			}
		})
	}
}

// TestBackAfterStop: a Redis restarted empty only fails the calls made
// meanwhile (one down when the poller starts: TestRefusedRedisFailsAtOnce).
func TestBackAfterStop(t *testing.T) {
	t.Parallel()
	o := started(t)
	s := o.s
	ctx := context.Background()
	wrote(t)(s.PutFetch(ctx, "photocraft", fetch(at("12:00"), "e", nil)))
	o.srv.Restart()
	// The restart broke the connection; reads are retried on a new one.
	if e, _, err := s.LoadApp(ctx, "photocraft"); err != nil || e.Fetched() {
		t.Fatalf("LoadApp after a restart = %s, %v; want no fetch and no error", fmtEntry(e), err)
	}
	// The restarted Redis has forgotten the script, so EVALSHA is answered
	// NOSCRIPT and the script is sent again.
	wrote(t)(s.PutNotModified(ctx, "photocraft", fetch(at("12:01"), "e", rel("v1"))))
	if e, want := load(t, s, "photocraft"), fetch(at("12:01"), "e", rel("v1")); !sameEntry(e, want) {
		t.Errorf("entry %s, want the republished %s", fmtEntry(e), fmtEntry(want))
	}
	if got := s.Mode(); got != ModeScript {
		t.Errorf("Mode() = %v, want %v", got, ModeScript)
	}
}
