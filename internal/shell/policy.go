package shell

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Policy guards what the shell tool runs. It is a guard rail against a
// model's mistakes, not a sandbox: a script file, or a program allowed by
// name, can still do anything.
//
// Command lines are parsed as bash parses them. Patterns are globs (*
// matches any text, spaces and slashes included) matched against each
// simple command (a call), wherever it stands: in a pipeline or list, a
// loop, a function, a substitution, behind env/xargs/timeout/sudo/nice,
// in find -exec, in sh -c or eval code. A call is matched with its
// quotes removed and its redirections after it ("echo hi > out.txt").
type Policy struct {
	// Allow, when not empty, lets a command run only if every call in it
	// matches one of these globs, the name of each is written out, and it
	// has no command or process substitution. Some forms of an allowed
	// command stay refused unless a matching pattern names them, as a
	// word of its own, or has no wildcard at all (an exact command line):
	//   - an interpreter's program inline (python3 -c, -Ic, -X utf8 -c;
	//     perl -e, node --eval, ...), on standard input (-, /dev/stdin, a
	//     here-string or a pipe) or as a module (-m, -M, --require):
	//     "python3 -c *" allows python3 -c, not python3 -Ic;
	//   - writing files: output redirections ("echo * > *"), tee ("tee *"),
	//     find -delete, -fprint, -fprint0, -fprintf, -fls ("find * -delete"),
	//     sort -o ("sort -o *"), sed -i ("sed -i *"), uniq's output operand
	//     (an exact pattern: "uniq in out");
	//   - a tool's options and script commands that run a program, load
	//     code or change the host (argtable.go): sort --compress-program,
	//     tar --to-command, git -c, ssh -o ProxyCommand, sed's e and w,
	//     vim -c, date -s, hostname NAME, ... ("git -c *");
	//   - a word whose value is known only when it runs, given to a command
	//     whose options matter (python3 $FLAG).
	// And never, whatever the patterns: ${X@P}, ${!X}, arithmetic on
	// variables, declare -i/-n, and variable names or values (a call's env,
	// X=... cmd) holding $(...) or backquotes, which these would run.
	Allow []string
	// Deny refuses a command if any call in it, as written or with its
	// quotes removed, or the whole line, matches one of these globs.
	Deny []string
	// ConfineCwd refuses a cwd outside Options.Dir (symlinks resolved).
	ConfineCwd bool
	// ScrubEnv removes inherited environment variables whose names match
	// one of these globs (say *_API_KEY) before a command runs. A call's
	// own env is kept: the model asked for it.
	ScrubEnv []string
	// ScrubURLPasswords removes inherited variables whose value is a URL
	// with a password (postgres://user:PASSWORD@host/db), whatever their
	// name.
	ScrubURLPasswords bool
}

// compiled is a Policy ready to check commands; nil allows everything.
type compiled struct {
	Policy
	allow, deny, scrub []*regexp.Regexp
}

func compilePolicy(p Policy) (*compiled, error) {
	c := &compiled{Policy: p}
	var err error
	if c.allow, err = globs(p.Allow, ""); err != nil {
		return nil, err
	}
	if c.deny, err = globs(p.Deny, ""); err != nil {
		return nil, err
	}
	// Names are scrubbed whatever their case: my_token is as secret as
	// MY_TOKEN.
	if c.scrub, err = globs(p.ScrubEnv, "(?i)"); err != nil {
		return nil, err
	}
	return c, nil
}

// globs turns shell-style globs (* and ?) into anchored regular
// expressions, with flags (such as "(?i)") before each.
func globs(pats []string, flags string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(pats))
	for _, p := range pats {
		if strings.TrimSpace(p) == "" {
			return nil, fmt.Errorf("shell policy: empty pattern")
		}
		re := regexp.QuoteMeta(strings.TrimSpace(p))
		re = strings.ReplaceAll(re, `\*`, `.*`)
		re = strings.ReplaceAll(re, `\?`, `.`)
		out = append(out, regexp.MustCompile(flags+`^`+re+`$`))
	}
	return out, nil
}

// checkEnv returns why a call's own environment variables are refused, or
// "": never one that runs code (BASH_ENV, LD_PRELOAD, exported functions,
// ...), and, when patterns decide what may run, not PATH (a PATH of the
// caller's would run its own "ls"), nor one that makes an interpreter or
// tool load code (codeEnv: PYTHONPATH, NODE_OPTIONS, LESSOPEN, GIT_PAGER,
// ...), nor a value that carries shell code (${X@P} or arithmetic would
// run it).
func (c *compiled) checkEnv(env []string) string {
	patterns := c != nil && (len(c.allow) > 0 || len(c.deny) > 0)
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if unsafeEnv.MatchString(name) {
			return fmt.Sprintf("env may not set %s: it makes the shell run code the command line does not show", name)
		}
		if patterns {
			if name == "PATH" {
				return "env may not set PATH while allow or deny patterns decide what runs (another PATH runs another \"ls\")"
			}
			if why := envRefusal(name, value); why != "" {
				return "env " + name + ": " + why
			}
		}
	}
	return ""
}

// unsafeEnv are variables that make a shell or the loader run code of the
// caller's choosing (GCONV_PATH: iconv loads its modules, shared objects,
// from there).
var unsafeEnv = regexp.MustCompile(`^(?:BASH_ENV|ENV|BASH_FUNC_.*|LD_PRELOAD|LD_AUDIT|LD_LIBRARY_PATH|GCONV_PATH|PROMPT_COMMAND|SHELLOPTS|BASHOPTS|PS4|IFS)$`)

// codeEnv are variables that make an interpreter or a common tool load or
// run code, or read a configuration that names commands, from where the
// caller says. They are refused while patterns decide what runs (an
// allowed "python3 *" or "git *" must not run a module or a pager no
// pattern shows); without patterns the command line can run anything
// anyway, and PYTHONPATH=src is an everyday need. Chosen by what each does:
//   - module and library paths searched before the system's: PYTHONPATH,
//     PYTHONHOME, PYTHONUSERBASE and PYTHONPLATLIBDIR (site-packages, whose
//     .pth files run code), PYTHONPYCACHEPREFIX (compiled modules), PERL5LIB,
//     PERLLIB, RUBYLIB, GEM_HOME, GEM_PATH, NODE_PATH, LUA_PATH, LUA_CPATH,
//     AWKPATH, AWKLIBPATH, CLASSPATH, OPENSSL_CONF/ENGINES/MODULES;
//   - options or code read at start: PYTHONSTARTUP, PYTHONINSPECT (then
//     reads code on standard input), PYTHONBREAKPOINT and PYTHONWARNINGS
//     (both import a module they name), PERL5OPT (-M), PERL5DB, RUBYOPT
//     (-r), NODE_OPTIONS (--require), LUA_INIT, PHPRC and PHP_INI_SCAN_DIR
//     (auto_prepend_file), JAVA_TOOL_OPTIONS, _JAVA_OPTIONS and
//     JDK_JAVA_OPTIONS (-javaagent), TAR_OPTIONS and ZIPOPT (--to-command,
//     -TT), EXINIT and VIMINIT;
//   - programs a tool runs: LESSOPEN, LESSCLOSE, LESSEDIT, LESSKEY*,
//     PAGER, MANPAGER, MANOPT, BROWSER, EDITOR, VISUAL, SSH_ASKPASS,
//     RSYNC_RSH, RSYNC_CONNECT_PROG and git's (GIT_SSH, GIT_SSH_COMMAND,
//     GIT_PAGER, GIT_EDITOR, GIT_SEQUENCE_EDITOR, GIT_EXTERNAL_DIFF,
//     GIT_ASKPASS, GIT_EXEC_PATH, GIT_PROXY_COMMAND, GIT_TEMPLATE_DIR,
//     GIT_CONFIG*: configuration can name an alias !cmd or core.pager);
//   - HOME and XDG_CONFIG_HOME: programs read their configuration (a
//     .gitconfig, .ssh/config, .vimrc and the commands they name) there.
var codeEnv = regexp.MustCompile(`^(?:PYTHON(?:PATH|HOME|USERBASE|PLATLIBDIR|PYCACHEPREFIX|STARTUP|INSPECT|BREAKPOINT|WARNINGS|EXECUTABLE)|` +
	`PERL5LIB|PERLLIB|PERL5OPT|PERL5DB|RUBYLIB|RUBYOPT|GEM_HOME|GEM_PATH|NODE_OPTIONS|NODE_PATH|LUA_(?:PATH|CPATH|INIT)(?:_\d+_\d+)?|` +
	`AWKPATH|AWKLIBPATH|CLASSPATH|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS|PHPRC|PHP_INI_SCAN_DIR|OPENSSL_(?:CONF|ENGINES|MODULES)|` +
	`TAR_OPTIONS|ZIPOPT|EXINIT|VIMINIT|LESSOPEN|LESSCLOSE|LESSEDIT|LESSKEY.*|PAGER|MANPAGER|MANOPT|BROWSER|EDITOR|VISUAL|SSH_ASKPASS|` +
	`RSYNC_RSH|RSYNC_CONNECT_PROG|GIT_(?:SSH|SSH_COMMAND|PAGER|EDITOR|SEQUENCE_EDITOR|EXTERNAL_DIFF|ASKPASS|EXEC_PATH|PROXY_COMMAND|TEMPLATE_DIR|CONFIG.*)|` +
	`HOME|XDG_CONFIG_HOME)$`)

// envRefusal says why a variable may not be set while patterns decide
// what runs, or "".
func envRefusal(name, value string) string {
	switch {
	case unsafeEnv.MatchString(name):
		return "it makes the shell or the loader run code the command line does not show"
	case name == "PATH":
		return "PATH may not be set while allow or deny patterns decide what runs (another PATH runs another \"ls\")"
	case codeEnv.MatchString(name):
		return "it makes an interpreter or tool load or run code the command line does not show (a module path, start-up code, a pager or a configuration); not allowed while allow or deny patterns decide what runs"
	case codeInValue.MatchString(value):
		return "the value holds shell code ($(...), backquotes, <(...)), which ${X@P}, arithmetic or eval would run; pass data without it"
	}
	return ""
}

// checkCommand returns why the policy refuses line, or "".
func (c *compiled) checkCommand(line string) string {
	if c == nil || len(c.allow) == 0 && len(c.deny) == 0 {
		return ""
	}
	if _, ok := matchAny(strings.TrimSpace(line), c.deny); ok {
		return fmt.Sprintf("the command matches a denied pattern (%s)", strings.Join(c.Deny, ", "))
	}
	var f found
	if why := c.collect(line, 0, &f, ""); why != "" {
		return why
	}
	for _, k := range f.calls {
		for _, text := range []string{k.src, k.call.text()} {
			if _, ok := matchAny(strings.TrimSpace(text), c.deny); ok {
				return fmt.Sprintf("%q matches a denied pattern (%s)", text, strings.Join(c.Deny, ", "))
			}
		}
	}
	if len(c.allow) == 0 {
		return ""
	}
	if len(f.refusals) > 0 {
		return f.refusals[0]
	}
	for _, k := range f.calls {
		if why := c.checkAllowed(k); why != "" {
			return why
		}
	}
	return ""
}

// found is every call of a line, nested ones included, with what each does.
type found struct {
	calls    []inspected
	refusals []string
}

type inspected struct {
	call
	inspection
}

// collect parses line and adds its calls to f, and those hidden in them.
// fed, when not "", says how the line feeds the input of the call whose
// code line is (echo x | sh -c 'vim').
func (c *compiled) collect(line string, depth int, f *found, fed string) string {
	if depth > 8 {
		return "commands nested too deep to check"
	}
	file, err := parseLine(line)
	if err != nil {
		return fmt.Sprintf("the command line does not parse as shell (%v); fix its quoting", err)
	}
	s := &scanner{line: line, allow: len(c.allow) > 0, fedAll: fed}
	s.scan(file)
	if s.refusal != "" {
		f.refusals = append(f.refusals, s.refusal)
	}
	for _, k := range s.calls {
		if why := c.add(k, depth, f); why != "" {
			return why
		}
	}
	return ""
}

func (c *compiled) add(k call, depth int, f *found) string {
	if depth > 8 {
		return "commands nested too deep to check"
	}
	in := inspect(k)
	f.calls = append(f.calls, inspected{k, in})
	for _, n := range in.nested {
		if why := c.add(n, depth+1, f); why != "" {
			return why
		}
	}
	for _, code := range in.code {
		if why := c.collect(code, depth+1, f, stdinOf(k)); why != "" {
			return why
		}
	}
	return ""
}

// checkAllowed returns why an allow list refuses one call, or "".
func (c *compiled) checkAllowed(k inspected) string {
	for _, a := range k.assigns {
		if why := envRefusal(a.name, a.value); why != "" {
			return fmt.Sprintf("%q sets %s: %s", k.src, a.name, why)
		}
	}
	if k.refusal != "" {
		return k.refusal
	}
	if len(k.words) == 0 {
		return "" // assignments only
	}
	if !k.words[0].static {
		return fmt.Sprintf("%q: the command's name must be written out when only some commands are allowed", k.src)
	}
	text := k.call.text()
	var matched []string
	for i, re := range c.allow {
		if re.MatchString(text) {
			matched = append(matched, strings.TrimSpace(c.Allow[i]))
		}
	}
	if len(matched) == 0 {
		return fmt.Sprintf("%q is not among the allowed commands (%s)", text, strings.Join(c.Allow, ", "))
	}
	for _, d := range k.dangers {
		if !named(d, matched) {
			how := fmt.Sprintf("an allow pattern without a wildcard (the exact command line, %q)", text)
			if len(d.triggers) > 0 {
				how = fmt.Sprintf("a pattern that names %s as a word of its own, such as %q, or one without a wildcard", d.triggers[0], example(k.call, d.triggers[0]))
			}
			return fmt.Sprintf("%q: %s; %s is not allowed by %s: allow it explicitly with %s", text, d.what, d.triggers0(), strings.Join(matched, ", "), how)
		}
	}
	return ""
}

// example is a pattern that matches the call and names trigger: its
// words up to the trigger, then " *" if more follow.
func example(k call, trigger string) string {
	var words []string
	for _, w := range k.words {
		words = append(words, w.text)
	}
	for _, r := range k.redirs {
		op, target, _ := strings.Cut(redirText(r), " ")
		words = append(words, op, target)
	}
	for i, w := range words {
		if w == trigger && i > 0 {
			if i == len(words)-1 {
				return strings.Join(words, " ")
			}
			return strings.Join(words[:i+1], " ") + " *"
		}
	}
	return commandName(k) + " " + trigger + " *"
}

func (d danger) triggers0() string {
	if len(d.triggers) == 0 {
		return "this form"
	}
	return d.triggers[0]
}

// named reports whether one of the matching patterns allows the danger
// explicitly: it has no wildcard, or one of its words is a trigger.
func named(d danger, patterns []string) bool {
	for _, p := range patterns {
		if !strings.ContainsAny(p, "*?") {
			return true
		}
		for _, f := range strings.Fields(p) {
			if slices.Contains(d.triggers, f) {
				return true
			}
		}
	}
	return false
}

func matchAny(s string, res []*regexp.Regexp) (string, bool) {
	for _, re := range res {
		if re.MatchString(s) {
			return re.String(), true
		}
	}
	return "", false
}

// checkCwd returns why dir may not be used, or "". With confine_cwd, dir
// is opened and judged by what was opened, and held is that directory,
// open: the command must start there (held.path), so that a symlink swapped
// after the check cannot move it. The caller closes held.
func (c *compiled) checkCwd(base, dir string) (why string, held *heldDir) {
	if c == nil || !c.ConfineCwd {
		return "", nil
	}
	realBase, err := filepath.EvalSymlinks(base)
	if err != nil {
		return fmt.Sprintf("cwd %s cannot be resolved", dir), nil
	}
	h, err := holdDir(dir)
	if err != nil {
		return fmt.Sprintf("cwd %s cannot be resolved", dir), nil
	}
	rel, err := filepath.Rel(realBase, h.real)
	if err != nil || !(rel == "." || filepath.IsLocal(rel)) {
		h.Close()
		return fmt.Sprintf("cwd %s is outside the working directory %s", dir, base), nil
	}
	return "", h
}

// checkCwdInside is checkCwd for a jail, where the host cannot resolve
// symlinks for it: the path is judged as written, and ".." may not leave.
func (c *compiled) checkCwdInside(base, dir string) string {
	if c == nil || !c.ConfineCwd {
		return ""
	}
	rel, err := filepath.Rel(base, filepath.Clean(dir))
	if err != nil || !(rel == "." || filepath.IsLocal(rel)) {
		return fmt.Sprintf("cwd %s is outside the working directory %s", dir, base)
	}
	return ""
}

// environ is the inherited environment less the scrubbed variables.
func (c *compiled) environ() []string {
	env := os.Environ()
	if c == nil || len(c.scrub) == 0 && !c.ScrubURLPasswords {
		return env
	}
	out := env[:0:0]
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if _, ok := matchAny(name, c.scrub); ok {
			continue
		}
		if c.ScrubURLPasswords && hasURLPassword(value) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// hasURLPassword reports whether s is a URL whose user info holds a
// password (scheme://user:PASSWORD@host, or scheme://:PASSWORD@host).
func hasURLPassword(s string) bool {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return false
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.User == nil {
		return false
	}
	_, ok := u.User.Password()
	return ok
}
