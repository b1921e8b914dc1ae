// Package shell is Saucer's MCP server for running shell commands on the
// device. It offers one tool, execute_command.
package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/saucerhq/saucer/tools"
)

// Defaults for the zero Options.
const (
	DefaultTimeout    = 60 * time.Second
	DefaultMaxTimeout = 10 * time.Minute
	DefaultMaxOutput  = 64 << 10
)

// Options configures the shell server. The zero value is usable.
type Options struct {
	// Shell runs each command as `Shell -c COMMAND`. Default: bash if it is
	// on PATH, else /bin/sh.
	Shell string
	// Dir is the working directory for commands and the base of a relative
	// cwd. Default: the process's working directory when New is called.
	Dir string
	// Timeout applies when a call gives none; MaxTimeout caps what a call may
	// ask for. Defaults: 60s and 10m.
	Timeout, MaxTimeout time.Duration
	// MaxOutput is how many bytes of each stream (stdout, stderr) are kept.
	// Default: 64 KiB.
	MaxOutput int
	// Env holds extra KEY=VALUE pairs added to the inherited environment.
	Env []string
	// Policy limits which commands run, where, and with which inherited
	// environment. A refusal is an error result that starts with
	// "policy:", logged to Logger.
	Policy Policy
	// Logger receives policy refusals; nil means slog.Default().
	Logger *slog.Logger
	// Jail, when set, runs every command inside it (a sandbox) instead of
	// on the host: Dir and cwd are paths inside, and commands get the
	// jail's environment plus Env and the call's, never the host's.
	Jail Jail
	// ReportEvery is the least time between two progress reports of a
	// running command's output (the "output" stream); a command that ends
	// sooner reports nothing. Default: DefaultReportEvery.
	ReportEvery time.Duration
	// Persistent runs every command in one long-lived shell, as a terminal
	// does: cd, variables and su carry over between calls. A call with
	// fresh set still gets a shell of its own. Build such a server with
	// Start, whose stop ends the shell and its background jobs.
	Persistent bool
}

// Jail is somewhere other than the host where commands run, such as a
// *sandbox.Sandbox.
type Jail interface {
	// Path is the host's view of a path inside.
	Path(inside string) string
	// Command runs argv inside, in dir, with exactly env (nil: the
	// jail's own).
	Command(ctx context.Context, dir string, env []string, argv ...string) *exec.Cmd
}

// jailEnv is the environment of jailed commands before Env and the call's.
var jailEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/root", "USER=root", "LOGNAME=root", "LANG=C.UTF-8", "TERM=dumb",
}

func (o Options) withDefaults() Options {
	if o.Jail != nil {
		if o.Shell == "" {
			o.Shell = "/bin/sh"
			if _, err := os.Stat(o.Jail.Path("/bin/bash")); err == nil {
				o.Shell = "/bin/bash"
			}
		}
		if o.Dir == "" {
			o.Dir = "/root"
		}
		o.Dir = filepath.Clean(o.Dir)
	}
	if o.Shell == "" {
		o.Shell = "/bin/sh"
		if p, err := exec.LookPath("bash"); err == nil {
			o.Shell = p
		}
	}
	if o.Dir == "" {
		if wd, err := os.Getwd(); err == nil {
			o.Dir = wd
		}
	}
	if abs, err := filepath.Abs(o.Dir); err == nil {
		o.Dir = abs
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxTimeout <= 0 {
		o.MaxTimeout = DefaultMaxTimeout
	}
	if o.Timeout > o.MaxTimeout {
		o.Timeout = o.MaxTimeout
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	if o.ReportEvery <= 0 {
		o.ReportEvery = DefaultReportEvery
	}
	return o
}

// New builds the shell MCP server (name "shell"). It panics on a policy
// pattern that is empty; use NewChecked to get an error instead.
func New(opts Options) *tools.Server {
	s, err := NewChecked(opts)
	if err != nil {
		panic(err)
	}
	return s
}

// NewChecked builds the shell MCP server, or says what is wrong with the
// policy. A persistent server needs Start.
func NewChecked(opts Options) (*tools.Server, error) {
	if opts.Persistent {
		return nil, errors.New("shell: a persistent shell needs shell.Start, whose stop ends it")
	}
	s, _, err := Start(opts)
	return s, err
}

// Start builds the shell MCP server, or says what is wrong with the
// options. stop ends a persistent server's shell with its background jobs,
// and waits (up to settleWait) until the cgroups of commands that were
// cancelled or timed out are removed; call it when the server is done.
func Start(opts Options) (srv *tools.Server, stop func() error, err error) {
	pol, err := compilePolicy(opts.Policy)
	if err != nil {
		return nil, nil, err
	}
	if opts.Persistent && opts.Policy.ConfineCwd {
		return nil, nil, errors.New("shell: confine_cwd cannot hold in a persistent shell, where cd carries over; turn one of them off")
	}
	r := &runner{opts: opts.withDefaults(), policy: pol}
	if r.opts.Logger == nil {
		r.opts.Logger = slog.Default()
	}
	// Stop waits for cancelled commands' cgroups to go.
	stop = func() error { r.settle(); return nil }
	instructions := "Runs shell commands on this device. Each call starts a fresh shell: cd and exported variables do not carry over; use cwd and env."
	what := fmt.Sprintf("Run a command with %s -c in a fresh shell and return its stdout, stderr and exit code. ", filepath.Base(r.opts.Shell))
	if opts.Persistent {
		env := append(r.policy.environ(), r.opts.Env...)
		if r.opts.Jail != nil {
			env = append(slices.Clone(jailEnv), r.opts.Env...)
		}
		r.session = &session{opts: r.opts, env: env}
		stop = func() error { r.settle(); return r.session.Close() }
		instructions = "Runs shell commands on this device in one persistent shell, as in a terminal: cd, variables and su carry over from one call to the next."
		what = fmt.Sprintf("Run a command in this device's persistent %s shell (cd, variables and su carry over between calls) and return its stdout, stderr and exit code. ", filepath.Base(r.opts.Shell))
	}
	jobs := "Standard input is empty. Background jobs (cmd &) keep running after the call; redirect their output, or the call waits 2s for it."
	if opts.Persistent {
		jobs = "Do not read standard input. Background jobs (cmd &) keep running in the shell; a timeout kills the shell with them and the next call starts a new shell."
	}
	// Asked about "my" PATH or aliases, a model must know this is not the
	// user's login shell.
	jobs += " Not a login shell: ~/.bashrc and ~/.profile are not read."
	// A fresh shell's output streams while it runs (the persistent
	// shell's is read when the command ends: only its fresh calls stream).
	streams := []string{StreamOutput}
	s := &tools.Server{Name: "shell", Instructions: instructions}
	s.Add(tools.New("execute_command",
		what+fmt.Sprintf("A non-zero exit code is reported, not treated as an error. The command is killed, with all its children, "+
			"once timeout seconds have passed (default %s, at most %s%s). Each of stdout and stderr is kept whole up to %d bytes, "+
			"past that its first %d and last %d with a line between. ",
			secs(r.opts.Timeout), secs(r.opts.MaxTimeout), inMinutes(r.opts.MaxTimeout), r.opts.MaxOutput, r.opts.MaxOutput-r.opts.MaxOutput/2, r.opts.MaxOutput/2)+jobs,
		tools.Annotations{Title: "Run a shell command", Risk: tools.RiskDestructive, OpenWorld: true, Streams: streams},
		r.execute))
	return s, stop, nil
}

// ExecuteInput is the input of execute_command.
type ExecuteInput struct {
	Command string  `json:"command" jsonschema_description:"The shell command line to run."`
	Cwd     string  `json:"cwd,omitempty" jsonschema_description:"Working directory for this command: absolute, or relative to the device's working directory (the one the shell starts in)."`
	Timeout Seconds `json:"timeout,omitempty" jsonschema_description:"Seconds before the command is killed: a number (120) or a string with a unit (\"120s\", \"2m\"). 0 or absent: the default."`
	Env     EnvVars `json:"env,omitempty" jsonschema_description:"Extra environment variables, as an object {\"KEY\": \"VALUE\"} or a list of \"KEY=VALUE\" strings."`
	// Args are passed to the command line as $1, $2, ... (it runs as
	// `bash -c COMMAND -- ARGS...`): values reach the program as they are,
	// never parsed as shell code.
	Args []string `json:"args,omitempty" jsonschema_description:"Values of $1, $2, ..."`
	// Fresh runs the command in a shell of its own even when the server
	// keeps a persistent one.
	Fresh bool `json:"fresh,omitempty" jsonschema_description:"A new shell, not the persistent one."`
}

// ExecuteOutput is the result of execute_command. It holds no wall time:
// the same command on the same files gives the same result, so that
// replays and evaluations see identical inputs (the recording times every
// command anyway).
type ExecuteOutput struct {
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	ExitCode  int    `json:"exit_code" jsonschema_description:"The exit status of the command line, as bash reports it: of its last command (a failure earlier in a list or a pipeline does not show here; read stderr)."`
	Truncated bool   `json:"truncated" jsonschema_description:"True if stdout or stderr was cut."`
}

// EnvVars are environment variables given to one command. They decode from
// a JSON object of strings or from a list of "KEY=VALUE" strings, because
// models write both.
type EnvVars []string

// UnmarshalJSON accepts {"K": "V"} or ["K=V"].
func (e *EnvVars) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		for _, kv := range list {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return fmt.Errorf("env entry %q is not KEY=VALUE", kv)
			}
		}
		*e = list
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return errors.New(`env must be an object {"KEY": "VALUE"} or a list of "KEY=VALUE" strings`)
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		switch v := v.(type) {
		case string:
			out = append(out, k+"="+v)
		case float64, bool:
			out = append(out, fmt.Sprintf("%s=%v", k, v))
		default:
			return fmt.Errorf("env value of %q must be a string", k)
		}
	}
	slices.Sort(out) // map order is random; keep runs reproducible
	*e = out
	return nil
}

// JSONSchema describes both accepted forms.
func (EnvVars) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "object", AdditionalProperties: &jsonschema.Schema{Type: "string"}},
		{Type: "array", Items: &jsonschema.Schema{Type: "string", Pattern: "^[^=]+=.*$"}},
	}}
}

type runner struct {
	opts    Options
	policy  *compiled
	session *session // the persistent shell, if any

	mu      sync.Mutex
	running map[*liveCmd]struct{} // fresh commands not yet cleaned up
}

// liveCmd is a fresh command until its cgroup is gone.
type liveCmd struct {
	ctx   context.Context // ends with the command's timeout or its caller
	group *cmdGroup
}

// settleWait bounds how long stop waits for cancelled commands' cgroups.
const settleWait = 10 * time.Second

// settle waits, for up to settleWait, until the cgroups of the commands
// that were cancelled or timed out are gone. A caller that gave up on a
// command has its call return at once while the command is still being
// killed; a process that exits right after would leave the cgroup. A
// command still running by its caller's will is not waited for.
func (r *runner) settle() {
	r.mu.Lock()
	var wait []<-chan struct{}
	for c := range r.running {
		if c.ctx.Err() != nil {
			wait = append(wait, c.group.done())
		}
	}
	r.mu.Unlock()
	deadline := time.After(settleWait)
	for _, ch := range wait {
		select {
		case <-ch:
		case <-deadline:
			return
		}
	}
}

// track counts c as running until the returned func is called.
func (r *runner) track(c *liveCmd) (untrack func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running == nil {
		r.running = map[*liveCmd]struct{}{}
	}
	r.running[c] = struct{}{}
	return func() {
		go func() {
			<-c.group.done()
			r.mu.Lock()
			delete(r.running, c)
			r.mu.Unlock()
		}()
	}
}

// refuse logs a policy violation and returns it as the tool's error.
func (r *runner) refuse(in ExecuteInput, why string) error {
	r.opts.Logger.Warn("shell policy refused a command", "command", in.Command, "cwd", in.Cwd, "reason", why)
	return fmt.Errorf("policy: %s", why)
}

// errTimedOut marks the command's own timeout, to tell it from the
// caller's deadline or cancellation.
var errTimedOut = errors.New("command timeout")

func (r *runner) execute(ctx context.Context, in ExecuteInput) (ExecuteOutput, error) {
	if strings.TrimSpace(in.Command) == "" {
		return ExecuteOutput{}, errors.New("command is empty")
	}
	if why := r.policy.checkCommand(in.Command); why != "" {
		return ExecuteOutput{}, r.refuse(in, why)
	}
	if why := r.policy.checkEnv(in.Env); why != "" {
		return ExecuteOutput{}, r.refuse(in, why)
	}
	timeout, err := r.timeout(in.Timeout)
	if err != nil {
		return ExecuteOutput{}, err
	}
	if r.session != nil && !in.Fresh {
		switch {
		case in.Cwd != "":
			return ExecuteOutput{}, errors.New("cwd does not apply in the persistent shell: cd there in the command (it carries over), or set fresh")
		case len(in.Env) > 0:
			return ExecuteOutput{}, errors.New("env does not apply in the persistent shell: export the variables in the command (they carry over), or set fresh")
		case len(in.Args) > 0:
			return ExecuteOutput{}, errors.New("args do not apply in the persistent shell: set fresh to run the command in a shell of its own with them")
		}
		return r.session.run(ctx, in.Command, timeout)
	}
	dir := r.opts.Dir
	if in.Cwd != "" {
		dir = in.Cwd
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(r.opts.Dir, dir)
		}
		if r.opts.Jail == nil {
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return ExecuteOutput{}, fmt.Errorf("cwd %s is not an existing directory", dir)
			}
			why, held := r.policy.checkCwd(r.opts.Dir, dir)
			if why != "" {
				return ExecuteOutput{}, r.refuse(in, why)
			}
			if held != nil {
				defer held.Close()
				dir = held.path
			}
		} else if why := r.policy.checkCwdInside(r.opts.Dir, dir); why != "" {
			return ExecuteOutput{}, r.refuse(in, why)
		}
	}

	ctx, cancel := withTimeout(ctx, timeout, errTimedOut)
	defer cancel()
	// $0 names the shell in its own messages: "bash: line 1: npm: command
	// not found", as a terminal says, not the path it was started by.
	argv := []string{r.opts.Shell, "-c", in.Command, filepath.Base(r.opts.Shell)}
	if len(in.Args) > 0 {
		argv = append(argv[:3], "--") // $0 is "--", as AgentBench runs its checks
		argv = append(argv, in.Args...)
	}
	tag := newTag()
	stdout, stderr := newCapped(r.opts.MaxOutput), newCapped(r.opts.MaxOutput)
	lines := newLineStream(ctx, r.opts.ReportEvery)
	defer lines.close()
	build := func(group *cmdGroup) *exec.Cmd {
		var cmd *exec.Cmd
		tagEnv := tagVar + "=" + tag
		if r.opts.Jail != nil {
			// The jail resolves dir inside; a missing one fails the command
			// with the jail's message (exit 125).
			env := append(append(append(slices.Clone(jailEnv), r.opts.Env...), in.Env...), tagEnv)
			cmd = r.opts.Jail.Command(ctx, dir, env, argv...)
		} else {
			cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Dir = dir
			cmd.Env = append(append(append(r.policy.environ(), r.opts.Env...), in.Env...), tagEnv)
		}
		// Own process group, so that a timeout kills what the shell started
		// too; the tag finds what left the group (setsid, daemons), the
		// cgroup, where there is one, what left both.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		dieWithParent(cmd.SysProcAttr)
		group.enter(cmd.SysProcAttr)
		cmd.Cancel = func() error {
			group.kill()
			err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			killTagged(tag)
			return err
		}
		// A background child that keeps our pipes open must not hold the call
		// forever once the shell itself has exited.
		cmd.WaitDelay = 2 * time.Second
		cmd.Stdout, cmd.Stderr = io.MultiWriter(stdout, streamWriter{lines, 0}), io.MultiWriter(stderr, streamWriter{lines, 1})
		return cmd
	}
	// A jail puts its commands in its own cgroup; on the host, each
	// command gets one where the machine allows it.
	var group *cmdGroup
	if r.opts.Jail == nil {
		group = newCmdGroup(tag)
	}
	// Tracked before it starts: a stop that comes while it starts (its
	// caller already gone) waits for its cgroup too.
	defer r.track(&liveCmd{ctx: ctx, group: group})()
	cmd := build(group)
	err = cmd.Start()
	if err != nil && group != nil {
		// A kernel that cannot start a process in a cgroup (clone3):
		// without one, as where there is no cgroup v2. (The group
		// tracked above is closed here, which a stop waits for.)
		group.close()
		group = nil
		cmd = build(nil)
		err = cmd.Start()
	}
	defer group.close()
	if err == nil {
		err = cmd.Wait()
	}
	lines.close() // the last lines are reported before the result
	out := ExecuteOutput{
		Stdout:    stdout.String(),
		Stderr:    stderr.String(),
		ExitCode:  cmd.ProcessState.ExitCode(),
		Truncated: stdout.dropped > 0 || stderr.dropped > 0,
	}
	if err != nil && ctx.Err() != nil {
		return out, fmt.Errorf("command %s and was killed; %s", stopped(ctx, timeout), capturedOutput(out))
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil, errors.As(err, &exitErr):
		return out, nil // a non-zero exit is data for the model, not a failure
	case errors.Is(err, exec.ErrWaitDelay):
		return out, nil // the command finished; a background child kept the output open
	default:
		return out, fmt.Errorf("could not run the command with %s: %v", r.opts.Shell, err)
	}
}

// timeout is the command's timeout: the call's, within the limit, or the
// default.
func (r *runner) timeout(given Seconds) (time.Duration, error) {
	n := float64(given)
	switch {
	case n < 0 || math.IsNaN(n):
		return 0, fmt.Errorf("timeout must be a positive number of seconds, got %v: %s, or leave it out for the default (%s)", n, secondsHelp, secs(r.opts.Timeout))
	case n == 0:
		return r.opts.Timeout, nil
	case n > r.opts.MaxTimeout.Seconds():
		// Compared in seconds before the conversion: 1e308 seconds does
		// not fit a Duration and would wrap to a negative one.
		return 0, fmt.Errorf("timeout %gs is over the limit of %s%s: give at most that, "+
			"or start the work in the background (cmd > log 2>&1 &) and check on it in later calls", n, secs(r.opts.MaxTimeout), inMinutes(r.opts.MaxTimeout))
	}
	return time.Duration(n * float64(time.Second)), nil
}

// capturedOutput describes what a killed command had written.
func capturedOutput(out ExecuteOutput) string {
	if out.Stdout == "" && out.Stderr == "" {
		return "it wrote no output"
	}
	return fmt.Sprintf("output so far:\nstdout:\n%s\nstderr:\n%s", out.Stdout, out.Stderr)
}

// stopped says why ctx, a command's, ended: its timeout or its caller.
func stopped(ctx context.Context, timeout time.Duration) string {
	if cause := context.Cause(ctx); !errors.Is(cause, errTimedOut) {
		return fmt.Sprintf("was stopped by its caller (%v)", cause)
	}
	return "timed out after " + formatSeconds(timeout)
}

func formatSeconds(d time.Duration) string {
	return fmt.Sprintf("%gs", d.Seconds())
}
