package shell

import (
	"fmt"
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
}

// compiled is a Policy ready to check commands; nil allows everything.
type compiled struct {
	Policy
	allow, deny, scrub []*regexp.Regexp
}

func compilePolicy(p Policy) (*compiled, error) {
	c := &compiled{Policy: p}
	var err error
	if c.allow, err = globs(p.Allow); err != nil {
		return nil, err
	}
	if c.deny, err = globs(p.Deny); err != nil {
		return nil, err
	}
	if c.scrub, err = globs(p.ScrubEnv); err != nil {
		return nil, err
	}
	return c, nil
}

// globs turns shell-style globs (* and ?) into anchored regular
// expressions.
func globs(pats []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(pats))
	for _, p := range pats {
		if strings.TrimSpace(p) == "" {
			return nil, fmt.Errorf("shell policy: empty pattern")
		}
		re := regexp.QuoteMeta(strings.TrimSpace(p))
		re = strings.ReplaceAll(re, `\*`, `.*`)
		re = strings.ReplaceAll(re, `\?`, `.`)
		out = append(out, regexp.MustCompile(`^`+re+`$`))
	}
	return out, nil
}

var separators = regexp.MustCompile(`\|\||&&|[;&|\n]`)

// parts splits a command line at its control operators. Quotes are not
// parsed, so a quoted ';' splits too: that errs on the side of checking
// more parts.
func parts(line string) []string {
	var out []string
	for _, p := range separators.Split(line, -1) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
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
	if strings.Contains(line, "$(") || strings.Contains(line, "`") {
		return "command substitution ($(...) or backquotes) is not allowed when only some commands are"
	}
	for _, p := range parts(line) {
		if _, ok := matchAny(p, c.allow); !ok {
			return fmt.Sprintf("%q is not among the allowed commands (%s)", p, strings.Join(c.Allow, ", "))
		}
	}
	return ""
}

// checkCwd returns why dir may not be used, or "".
func (c *compiled) checkCwd(base, dir string) string {
	if c == nil || !c.ConfineCwd {
		return ""
	}
	realBase, err1 := filepath.EvalSymlinks(base)
	realDir, err2 := filepath.EvalSymlinks(dir)
	if err1 != nil || err2 != nil {
		return fmt.Sprintf("cwd %s cannot be resolved", dir)
	}
	rel, err := filepath.Rel(realBase, realDir)
	if err != nil || !(rel == "." || filepath.IsLocal(rel)) {
		return fmt.Sprintf("cwd %s is outside the working directory %s", dir, base)
	}
	return ""
}

// environ is the inherited environment less the scrubbed variables.
func (c *compiled) environ() []string {
	env := os.Environ()
	if c == nil || len(c.scrub) == 0 {
		return env
	}
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := matchAny(name, c.scrub); !ok {
			out = append(out, kv)
		}
	}
	return out
}
