package shell

import (
	"bufio"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
)

// corpusCase is one line of testdata/policy_corpus.tsv.
type corpusCase struct {
	line           int
	allow          []string
	family, expect string
	command        string
	env            []string
}

func readCorpus(t *testing.T) []corpusCase {
	t.Helper()
	f, err := os.Open("testdata/policy_corpus.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusCase
	var allow []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		cols := strings.Split(text, "\t")
		if cols[0] == "policy" {
			allow = cols[1:]
			continue
		}
		if len(cols) < 3 || (cols[1] != "refuse" && cols[1] != "run") {
			t.Fatalf("policy_corpus.tsv:%d: want FAMILY, refuse|run, COMMAND[, ENV]: %q", n, text)
		}
		c := corpusCase{line: n, allow: allow, family: cols[0], expect: cols[1], command: strings.ReplaceAll(cols[2], "⏎", "\n")}
		if len(cols) > 3 {
			c.env = cols[3:]
		}
		out = append(out, c)
	}
	return out
}

// verdict is what the policy says of a call: its refusal, or "".
func (c corpusCase) verdict(t *testing.T) string {
	t.Helper()
	pol, err := compilePolicy(Policy{Allow: c.allow})
	if err != nil {
		t.Fatal(err)
	}
	if why := pol.checkCommand(c.command); why != "" {
		return why
	}
	return pol.checkEnv(c.env)
}

// Every bypass attempt in the corpus is refused by the real policy, and
// every look-alike and explicitly allowed form passes.
func TestPolicyCorpus(t *testing.T) {
	cases := readCorpus(t)
	refusals := map[string]int{}
	for _, c := range cases {
		why := c.verdict(t)
		switch {
		case c.expect == "refuse" && why == "":
			t.Errorf("line %d (%s): %q was allowed under %q", c.line, c.family, c.command, c.allow)
		case c.expect == "run" && why != "":
			t.Errorf("line %d (%s): %q was refused under %q: %s", c.line, c.family, c.command, c.allow, why)
		case c.expect == "refuse":
			refusals[c.family]++
		}
	}
	total := 0
	for _, n := range refusals {
		total += n
	}
	t.Logf("%d attempts refused: %v", total, refusals)
	if total < 60 {
		t.Errorf("the corpus holds %d bypass attempts, want at least 60", total)
	}
	for _, family := range []string{"inline", "stdin", "module", "write", "env"} {
		if refusals[family] == 0 {
			t.Errorf("no attempt of the %s family", family)
		}
	}
}

// Refused commands do not run: every attempt that would create ./pwned
// goes through the real shell tool, which refuses it, and the file is not
// there. An explicitly allowed command that writes a file does run, so
// the check would see a file made.
func TestPolicyCorpusThroughTheTool(t *testing.T) {
	servers := map[string]*toolUnderTest{}
	tested := 0
	for _, c := range readCorpus(t) {
		if c.expect != "refuse" || !strings.Contains(c.command, "pwned") {
			continue
		}
		key := strings.Join(c.allow, "\t")
		if servers[key] == nil {
			servers[key] = newToolUnderTest(t, c.allow)
		}
		s := servers[key]
		args := map[string]any{"command": c.command}
		if len(c.env) > 0 {
			args["env"] = c.env
		}
		_, text, isErr := run(t, s.c, args)
		if !isErr || !strings.HasPrefix(text, "policy: ") {
			t.Errorf("line %d: %q was not refused by the tool: %s", c.line, c.command, text)
		}
		if _, err := os.Stat(filepath.Join(s.dir, "pwned")); err == nil {
			t.Fatalf("line %d: %q ran and created pwned", c.line, c.command)
		}
		tested++
	}
	if tested < 60 {
		t.Errorf("%d attempts went through the tool, want at least 60", tested)
	}
	s := newToolUnderTest(t, []string{"echo * > *"})
	if _, text, isErr := run(t, s.c, map[string]any{"command": "echo hi > made"}); isErr {
		t.Fatalf("an explicitly allowed write was refused: %s", text)
	}
	if b, err := os.ReadFile(filepath.Join(s.dir, "made")); err != nil || string(b) != "hi\n" {
		t.Errorf("the allowed write did not happen: %q %v", b, err)
	}
	// The same for the forms that write through a tool's operands and
	// script commands: refused under "uniq *" and "sed *", they run when a
	// pattern names them, and the file they write is there.
	s = newToolUnderTest(t, []string{"echo *", "uniq *", "sed *", "uniq in made", "sed -n w made2 in"})
	if err := os.WriteFile(filepath.Join(s.dir, "in"), []byte("a\na\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ refused, allowed, file, want string }{
		{"uniq in out", "uniq in made", "made", "a\nb\n"},
		{"sed -n 'w out' in", "sed -n 'w made2' in", "made2", "a\na\nb\n"},
	} {
		if _, text, isErr := run(t, s.c, map[string]any{"command": tt.refused}); !isErr || !strings.HasPrefix(text, "policy: ") {
			t.Errorf("%s was not refused: %s", tt.refused, text)
		}
		if _, err := os.Stat(filepath.Join(s.dir, "out")); err == nil {
			t.Fatalf("%s ran and wrote out", tt.refused)
		}
		if _, text, isErr := run(t, s.c, map[string]any{"command": tt.allowed}); isErr {
			t.Fatalf("%s, allowed by an exact pattern, was refused: %s", tt.allowed, text)
		}
		if b, err := os.ReadFile(filepath.Join(s.dir, tt.file)); err != nil || string(b) != tt.want {
			t.Errorf("%s did not write %s: %q %v", tt.allowed, tt.file, b, err)
		}
	}
}

type toolUnderTest struct {
	dir string
	c   *mcpclient.Client
}

func newToolUnderTest(t *testing.T, allow []string) *toolUnderTest {
	dir := t.TempDir()
	return &toolUnderTest{dir: dir, c: connect(t, Options{Dir: dir, Logger: slog.New(slog.DiscardHandler), Policy: Policy{Allow: allow}})}
}
