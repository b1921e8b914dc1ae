package shell

import (
	"context"
	"errors"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/hosttest"
)

// sandboxVerdict runs GNU sed --sandbox on script (input /dev/null, in
// dir): whether sed refused an e, r or w command, and whether it read
// the script at all.
func sandboxVerdict(t *testing.T, dir, script string) (refused, ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sed", "--sandbox", "-n", script, "/dev/null")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("sed: %v", err)
	}
	return strings.Contains(string(out), "disabled in sandbox mode"), err == nil
}

// The policy's reading of sed scripts agrees with GNU sed's own: every
// script in which sed --sandbox finds an e, r or w command (s///e and
// s///w included) is one where the policy finds it or cannot read the
// script; where the policy finds one, sed does too; and every script sed
// reads, the policy reads. Hand-written cases, then scripts put together
// at random from pieces whose meaning changes with what follows them
// (a, i, c, r, w and e take the rest of the line).
func TestSedCommandsAgreeWithSedSandbox(t *testing.T) {
	if _, err := exec.LookPath("sed"); err != nil {
		hosttest.Missing(t, "sed is missing")
	}
	if out, _ := exec.Command("sed", "--version").Output(); !strings.Contains(string(out), "GNU") {
		t.Skip("not GNU sed")
	}
	scripts := []string{
		"p", "s/a/b/", "s/e/w/g", "e touch x", "1e touch x", "w out", "W out", "r in", "R in",
		"s/a/b/w out", "s/a/b/e", "s|a|b|ge", "s/a/b/;w out", "a text; w out", "a\\\ntext\nw out",
		"i\\", "i\\\ne not a command", "c text\\\nw still text\np", "/[/]/e x", "/[/]/d", "\\,x,e x", "\\,x,d",
		"y/ew/we/", "y/abc/xyz/;e x", ":a;N;$!ba;s/\\n/ /g", ":a;N;$!ba;w out", "0~4e x", "1,+2w out", "$!N",
		"/x/!w out", "/x/I,/y/M{p;w out\n}", "1{e x\n}", "1{p};$p", "# w out\np", "s/x/y/;# e x", "#n\np",
		"s/[[:alpha:]/]/x/", "s/[]/]/x/e", "s/a\\/b/c/w out", "l 5;q", "Q1", "v 4.2", "F;z;=", "bend;w x;:end",
		"s/a/b/2p", "s/a/\\\nb/", "s/a/b/ w out", "b a;w x", "y/a\\/b/c\\/d/", "s/x/y/gw out", "n;d;x;h;H;g;G;D;P;N",
	}
	pieces := []string{"p", "s/a/b/", "s/e/w/g", "e touch x", "w out", "r in", "a text", "i\\", "c x", "y/ew/we/",
		"/[/]/d", "$!N", ":a", "ba", "s/x/y/w out", "s|e|w|e", "{p}", "\\,e,d", "# w x", "1e x", "q", "{", "}", "!p", "1!w out",
		"s/[/]/x/", "l", "=", "y/e/w/", "/w/e"}
	seps := []string{";", "\n", " ; ", "", " "}
	rnd := rand.New(rand.NewPCG(7, 11))
	for range 400 {
		var b strings.Builder
		for i, n := 0, 1+rnd.IntN(4); i < n; i++ {
			if i > 0 {
				b.WriteString(seps[rnd.IntN(len(seps))])
			}
			b.WriteString(pieces[rnd.IntN(len(pieces))])
		}
		scripts = append(scripts, b.String())
	}
	dir := t.TempDir()
	var found, clean, unread int
	for _, script := range scripts {
		refused, ok := sandboxVerdict(t, dir, script)
		cmds, err := sedCommands(script)
		switch {
		case refused && err == nil && len(cmds) == 0:
			t.Errorf("%q: sed finds e, r or w; the policy finds none", script)
		case !refused && ok && err != nil:
			t.Errorf("%q: sed reads it; the policy cannot (%v)", script, err)
		case !refused && ok && len(cmds) > 0:
			t.Errorf("%q: the policy finds %v; sed finds no e, r or w", script, cmds)
		}
		switch {
		case err != nil:
			unread++
		case len(cmds) > 0:
			found++
		default:
			clean++
		}
	}
	t.Logf("%d scripts: %d with e/r/w, %d without, %d the policy cannot read", len(scripts), found, clean, unread)
	if found < 50 || clean < 50 {
		t.Errorf("too few of one kind to say much (%d with, %d without)", found, clean)
	}
}

// Under an allow list, a sed script's e, w and W (and s///e, s///w) are
// dangers a pattern must allow; r and R only read, as sed's operands do.
func TestSedScriptDangers(t *testing.T) {
	pol, err := compilePolicy(Policy{Allow: []string{"sed *"}})
	if err != nil {
		t.Fatal(err)
	}
	for line, want := range map[string]string{
		`sed 's/a/b/e' f`:               "s///e runs a command",
		`sed -n 'W out' f`:              "W writes the file out",
		`sed -e p -e 'w out' f`:         "w writes the file out",
		`sed --expression='1e date' f`:  "e runs a command",
		`sed -f prog.sed f`:             "reads its script from a file",
		`sed 's/a/b/' -i f`:             "edits files in place",
		`sed 's/a/b' f`:                 "cannot read the script",
		`sed 'r /etc/hostname' f`:       "",
		`sed --sandbox 'w out' f`:       "",
		`sed -n '/start/,/end/{p}' f`:   "",
		`sed 'a appended; w not a cmd'`: "",
	} {
		got := pol.checkCommand(line)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", line, got, want)
		}
	}
}
