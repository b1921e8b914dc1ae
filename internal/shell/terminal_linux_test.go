package shell

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// needBash skips where bash is missing: the messages checked are bash's.
func needBash(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not on PATH")
	}
}

// A shell's own messages name the shell, as a terminal's do, never a
// file of Saucer's: a persistent shell used to source each command from
// /tmp/saucer-shell-…/command-N.sh, and the model read that path in
// "command not found".
func TestShellMessagesNameTheShell(t *testing.T) {
	needBash(t)
	const missing = "saucer_test_no_such_program"
	check := func(t *testing.T, c *mcpclient.Client, extra map[string]any) {
		t.Helper()
		call := func(command string) ExecuteOutput {
			args := map[string]any{"command": command}
			for k, v := range extra {
				args[k] = v
			}
			return mustRun(t, c, args)
		}
		out := call(missing + " install")
		if out.ExitCode != 127 || !strings.HasPrefix(out.Stderr, "bash: ") || !strings.HasSuffix(out.Stderr, missing+": command not found\n") ||
			strings.Contains(out.Stderr, "/") {
			t.Errorf("a missing program: %+v", out)
		}
		// A script's second line fails: its message too.
		out = call("echo first\ncd /nonexistent-dir-of-saucer-test")
		if out.Stdout != "first\n" || !strings.HasPrefix(out.Stderr, "bash: ") || !strings.Contains(out.Stderr, "cd: /nonexistent-dir-of-saucer-test: No such file or directory") ||
			strings.Contains(out.Stderr, "saucer-shell") || strings.Contains(out.Stderr, ".sh:") {
			t.Errorf("a failing cd: %+v", out)
		}
		if got := call(`printf '%s|%s' "$0" "${BASH_SOURCE[0]}"`).Stdout; got != "bash|" {
			t.Errorf("$0|BASH_SOURCE = %q, want bash|", got)
		}
	}
	t.Run("fresh", func(t *testing.T) {
		check(t, connect(t, Options{Dir: t.TempDir()}), nil)
	})
	t.Run("persistent", func(t *testing.T) {
		c, _ := connectPersistent(t, Options{Dir: t.TempDir()})
		check(t, c, nil)
	})
	t.Run("fresh beside a persistent one", func(t *testing.T) {
		c, _ := connectPersistent(t, Options{Dir: t.TempDir()})
		check(t, c, map[string]any{"fresh": true})
	})
	// In a jail, which starts the shell by its path: this one runs
	// commands on the host, as a sandbox would inside.
	t.Run("jailed", func(t *testing.T) {
		check(t, connect(t, Options{Dir: t.TempDir(), Jail: hostJail{}}), nil)
	})
	t.Run("jailed persistent", func(t *testing.T) {
		c, _ := connectPersistent(t, Options{Dir: t.TempDir(), Jail: hostJail{}})
		check(t, c, nil)
	})
	// With args, $0 stays "--", as AgentBench's checks run (bash -c CODE -- ARGS).
	c := connect(t, Options{Dir: t.TempDir()})
	if got := mustRun(t, c, map[string]any{"command": `printf '%s %s' "$0" "$1"`, "args": []string{"x"}}).Stdout; got != "-- x" {
		t.Errorf("with args: $0 $1 = %q, want -- x", got)
	}
}

// hostJail is a Jail whose inside is the host.
type hostJail struct{}

func (hostJail) Path(inside string) string { return inside }

func (hostJail) Command(ctx context.Context, dir string, env []string, argv ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	return cmd
}

// A command longer than a pipe holds reaches the persistent shell whole,
// quotes and all, and a here-document that ends the command is closed.
func TestPersistentShellTakesLongCommands(t *testing.T) {
	c, _ := connectPersistent(t, Options{Dir: t.TempDir()})
	long := strings.Repeat("it's \"quoted\" $HOME `x` \\ ", 4000) // over 64 KiB
	out := mustRun(t, c, map[string]any{"command": "v='" + strings.ReplaceAll(long, "'", `'\''`) + "'\necho ${#v}"})
	if want := len(long); strings.TrimSpace(out.Stdout) != itoa(want) {
		t.Errorf("length = %q, want %d (stderr %q)", out.Stdout, want, out.Stderr)
	}
	out = mustRun(t, c, map[string]any{"command": "cat <<'EOT'\nhere\nEOT"})
	if out.Stdout != "here\n" || out.Stderr != "" {
		t.Errorf("here-document: %+v", out)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestSecondsDecodes(t *testing.T) {
	for in, want := range map[string]float64{
		`120`: 120, `1.5`: 1.5, `"90"`: 90, `"90s"`: 90, `"2m"`: 120, `"1m30s"`: 90, `"500ms"`: 0.5,
		`"2 minutes"`: 120, `"45 sec"`: 45, `"1 hour"`: 3600, `" 3 S "`: 3, `""`: 0, `null`: 0,
	} {
		var s Seconds
		if err := json.Unmarshal([]byte(in), &s); err != nil || float64(s) != want {
			t.Errorf("%s: got %v, %v; want %v", in, float64(s), err, want)
		}
	}
	for _, in := range []string{`"soon"`, `"2 fortnights"`, `true`, `[60]`, `{"s": 1}`} {
		var s Seconds
		err := json.Unmarshal([]byte(in), &s)
		if err == nil || !strings.Contains(err.Error(), `"120s"`) {
			t.Errorf("%s: %v, want an error that says what is accepted", in, err)
		}
	}
}

// armedAt is when the fake clock's pending timers fire.
func armedAt(c *fakeClock) []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for tm := range c.timers {
		out = append(out, tm.at)
	}
	return out
}

// A timeout given as a string with a unit is the command's timeout, in
// the plain and the persistent shell; one that is not a length of time is
// refused with what is accepted; the description tells the real default
// and limit in the unit a call gives.
func TestTimeoutTakesUnits(t *testing.T) {
	for _, persistent := range []bool{false, true} {
		name := "fresh"
		if persistent {
			name = "persistent"
		}
		t.Run(name, func(t *testing.T) {
			opts := Options{Dir: t.TempDir(), MaxTimeout: 25 * time.Minute}
			var c *mcpclient.Client
			if persistent {
				c, _ = connectPersistent(t, opts)
			} else {
				c = connect(t, opts)
			}
			sig := newSignals(t)
			clk := newFakeClock()
			done := callAsync(withClock(context.Background(), clk), c, map[string]any{
				"command": "echo ready > " + shellQuote(sig.path) + "; sleep 300", "timeout": "2m"})
			sig.next(t)
			clk.waitArmed(t)
			if at := armedAt(clk); len(at) != 1 || at[0] != 2*time.Minute {
				t.Fatalf("timers at %v, want one at 2m", at)
			}
			clk.advance(2 * time.Minute)
			if res := await(t, done); !res.isErr || !strings.Contains(res.text, "timed out after 120s") {
				t.Fatalf("%+v", res)
			}
			for _, bad := range []struct {
				timeout any
				want    string
			}{
				{"soon", `"soon" is not a length of time: give seconds as a number (120) or as a string with a unit ("120s", "2m", "1m30s")`},
				{"30m", "timeout 1800s is over the limit of 1500s, which is 25 minutes: give at most that"},
				{-5, "timeout must be a positive number of seconds"},
			} {
				_, text, isErr := run(t, c, map[string]any{"command": "true", "timeout": bad.timeout})
				if !isErr || !strings.Contains(text, bad.want) {
					t.Errorf("timeout %v: %q, want an error with %q", bad.timeout, text, bad.want)
				}
			}
			if out := mustRun(t, c, map[string]any{"command": "echo ok", "timeout": "90"}); out.Stdout != "ok\n" {
				t.Errorf("%+v", out)
			}
			list, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			desc := list.Tools[0].Description
			// The cut it describes is capped's: the head and the tail.
			if !strings.Contains(desc, "once timeout seconds have passed (default 60s, at most 1500s, which is 25 minutes)") || strings.Contains(desc, "m0s") ||
				!strings.Contains(desc, "kept whole up to 65536 bytes, past that its first 32768 and last 32768") || !strings.Contains(desc, "Not a login shell") {
				t.Errorf("description: %s", desc)
			}
			schema, _ := json.Marshal(list.Tools[0].InputSchema.Properties["timeout"])
			for _, want := range []string{`"number"`, `"string"`, `\"120s\"`} {
				if !strings.Contains(string(schema), want) {
					t.Errorf("timeout schema %s lacks %s", schema, want)
				}
			}
		})
	}
}

// A command the shell does not read (its pipe is full) does not hold the
// call past its timeout: the write ends with the call's context.
func TestSendEndsWithItsContext(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := &session{stdin: w}
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.send(ctx, strings.Repeat("x", 1<<20)) }()
	cancel(errTimedOut)
	select {
	case err := <-done:
		if !errors.Is(err, errTimedOut) {
			t.Errorf("send: %v, want the timeout", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("send went on after its context ended")
	}
}
