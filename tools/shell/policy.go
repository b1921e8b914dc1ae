package shell

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Policy guards what the shell tool runs. It is a guard rail against a
// model's mistakes, not a sandbox: a determined command can hide what it
// does from any pattern.
type Policy struct {
	// Allow, when not empty, lets a command run only if every part of it
	// (split at ;, &, &&, ||, | and newlines) matches one of these globs,
	// and it has no command substitution ($(...) or backquotes). A glob's
	// * matches any text, spaces and slashes included.
	Allow []string
	// Deny refuses a command if any part of it, or the whole line, matches
	// one of these globs.
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

var separators = regexp.MustCompile(`\|\||&&|[;&|\n]`)

// parts splits a command line at its control operators, and adds the
// commands hidden inside it, so that a pattern sees them too: the code of
// sh/bash -c, what env, xargs, nice, timeout, sudo and find -exec run, and
// what process and command substitution run (<(...), >(...), $(...)).
// Quotes are not parsed, so a quoted ';' splits too: that errs on the side
// of checking more parts.
func parts(line string) []string {
	var out []string
	seen := map[string]bool{}
	var add func(s string, depth int)
	add = func(s string, depth int) {
		for _, p := range separators.Split(s, -1) {
			p = strings.TrimSpace(p)
			if p == "" || seen[p] {
				continue
			}
			seen[p] = true
			out = append(out, p)
			if depth < 4 {
				for _, inner := range hidden(p) {
					add(inner, depth+1)
				}
			}
		}
	}
	add(line, 0)
	return out
}

var (
	// shellC is sh -c CODE and the like; the code may be quoted.
	shellC = regexp.MustCompile(`(?:^|\s|/)(?:ba|da|z|k)?sh(?:\s+-[a-zA-Z]+)*\s+-c\s+(.+)$`)
	// runsRest is a command that runs the rest of its line as a command.
	runsRest = regexp.MustCompile(`^(?:\S*/)?(?:env|xargs|nice|nohup|timeout|sudo|doas|stdbuf|setsid|exec|command|time)(?:\s+(?:-\S+|[A-Za-z_][A-Za-z0-9_]*=\S*|\d+[smhd]?))*\s+(.+)$`)
	// findExec is what find runs for each file.
	findExec = regexp.MustCompile(`\s-(?:exec|execdir|ok|okdir)\s+(.+?)(?:\s+\\?;|\s+\+|$)`)
	// substitution is <(...), >(...) or $(...), innermost first.
	substitution = regexp.MustCompile(`[<>$]\(([^()]*)\)`)
)

// hidden returns the commands a part runs besides itself.
func hidden(p string) []string {
	var out []string
	if m := shellC.FindStringSubmatch(p); m != nil {
		out = append(out, unquote(m[1]))
	}
	if m := runsRest.FindStringSubmatch(p); m != nil {
		out = append(out, m[1])
		if strings.Contains(p, "xargs") {
			out = append(out, m[1]+" ARGS") // xargs adds its input as arguments
		}
	}
	for _, m := range findExec.FindAllStringSubmatch(p, -1) {
		out = append(out, m[1])
	}
	for _, m := range substitution.FindAllStringSubmatch(p, -1) {
		out = append(out, m[1])
	}
	return out
}

func unquote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// inlineCode finds an interpreter given code on its command line (python
// -c, perl -e, ruby -e, node -e, php -r): code no shell pattern can check.
var inlineCode = regexp.MustCompile(`(?:^|\s|/)(?:python[0-9.]*|perl|ruby|node|php|lua|awk|gawk|osascript)\s+(?:-\S+\s+)*-(?:c|e|r|E)\b`)

// unsafeEnv are variables that make a shell or the loader run code of the
// caller's choosing; a call may not set them.
var unsafeEnv = regexp.MustCompile(`^(?:BASH_ENV|ENV|BASH_FUNC_.*|LD_PRELOAD|LD_AUDIT|LD_LIBRARY_PATH|PROMPT_COMMAND|SHELLOPTS|BASHOPTS|PS4|IFS)$`)

// checkEnv returns why a call's own environment variables are refused, or
// "": never one that runs code (BASH_ENV, LD_PRELOAD, exported functions,
// ...), and not PATH when patterns decide what may run (a PATH of the
// caller's would run its own "ls").
func (c *compiled) checkEnv(env []string) string {
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if unsafeEnv.MatchString(name) {
			return fmt.Sprintf("env may not set %s: it makes the shell run code the command line does not show", name)
		}
		if name == "PATH" && c != nil && (len(c.allow) > 0 || len(c.deny) > 0) {
			return "env may not set PATH while allow or deny patterns decide what runs"
		}
	}
	return ""
}

func matchAny(s string, res []*regexp.Regexp) (string, bool) {
	for _, re := range res {
		if re.MatchString(s) {
			return re.String(), true
		}
	}
	return "", false
}

// checkCommand returns why the policy refuses line, or "".
func (c *compiled) checkCommand(line string) string {
	if c == nil {
		return ""
	}
	all := append([]string{strings.TrimSpace(line)}, parts(line)...)
	for i, p := range all {
		if _, ok := matchAny(p, c.deny); ok {
			if i == 0 {
				return fmt.Sprintf("the command matches a denied pattern (%s)", strings.Join(c.Deny, ", "))
			}
			return fmt.Sprintf("%q matches a denied pattern (%s)", p, strings.Join(c.Deny, ", "))
		}
	}
	if len(c.allow) == 0 {
		return ""
	}
	if strings.Contains(line, "$(") || strings.Contains(line, "`") || strings.Contains(line, "<(") || strings.Contains(line, ">(") {
		return "command or process substitution ($(...), backquotes, <(...), >(...)) is not allowed when only some commands are"
	}
	if m := inlineCode.FindString(line); m != "" {
		return fmt.Sprintf("inline code (%s) cannot be checked against the allowed commands; run a script file instead", strings.TrimSpace(m))
	}
	for _, p := range parts(line) {
		if _, ok := matchAny(p, c.allow); !ok {
			return fmt.Sprintf("%q is not among the allowed commands (%s)", p, strings.Join(c.Allow, ", "))
		}
	}
	return ""
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
