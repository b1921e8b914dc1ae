package agentbench_test

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/internal/agentbench"
)

// testSet holds tasks of AgentBench's test set (data/N/*.json), each copied
// alone into data/N/<file>-<its index>.json, so a case's id names the task
// it came from: 7-bootstrap-008-000 is 7-bootstrap-008.
const testSet = "../../testdata/agentbench-os/data"

// Each task states the answer rule its checker holds the answer to, and
// the tasks Saucer's sandbox cannot judge are labelled, with the reason.
func TestImportTestSetFormatsAndHonesty(t *testing.T) {
	res, s := importSuite(t, agentbench.Options{Paths: []string{testSet}})
	cases := byID(s)
	for id, want := range map[string]string{
		"1-stock-002-000":     agentbench.IntegerFormat, // null, then check/integer-match.py
		"1-stock-005-000":     agentbench.ExactFormat,   // check/string-match.py
		"4-N41-000-000":       agentbench.ExactFormat,   // match "no"
		"4-Q47-000-000":       agentbench.AloneFormat,   // its own checker reads argv[1]
		"4-Q49-000-000":       agentbench.ExactFormat,
		"5-new-000-000":       "",                    // a state check: the calc command works
		"5-new-005-000":       agentbench.SizeFormat, // check/size-match.py
		"6-new-003-000":       "",
		"6-new-004-000":       "",
		"6-new-005-000":       "",
		"6-new-007-000":       "",
		"7-bootstrap-000-000": agentbench.IntegerFormat,
		"7-bootstrap-008-000": agentbench.IntegerFormat,
		"7-bootstrap-025-000": agentbench.IntegerFormat,
	} {
		c, ok := cases[id]
		if !ok {
			t.Fatalf("no case %s among %v", id, slices.Sorted(maps.Keys(cases)))
		}
		if c.AnswerFormat != want {
			t.Errorf("%s: answer_format %q, want %q", id, c.AnswerFormat, want)
		}
	}
	// chmod u+s in the init, sudo installed by the init, chmod g+s in the
	// only solution, and TARGET_DIR exported by an init script for the
	// example run by the check.
	wantCannot := []string{"6-new-003-000", "6-new-005-000", "6-new-007-000", "7-bootstrap-008-000"}
	if !slices.Equal(res.CannotJudge, wantCannot) {
		t.Errorf("cannot be judged: %v, want %v", res.CannotJudge, wantCannot)
	}
	for id, c := range cases {
		if slices.Contains(c.Labels, agentbench.CannotJudge) != slices.Contains(wantCannot, id) {
			t.Errorf("%s: labels %v", id, c.Labels)
		}
	}
	reasons := map[string][]string{
		"6-new-003-000":       {"create.init 1 runs `chmod u+s /usr/bin/find`", "refuses to make setuid or setgid files"},
		"6-new-005-000":       {"create.init 1 installs sudo, a package with setuid files"},
		"6-new-007-000":       {"the example solution (in the agent's shell) runs `chmod g+s /data`"},
		"7-bootstrap-008-000": {"$TARGET_DIR is read by", "evaluation.check 1 (the example solution, run for the expected output)", "only create.init 1 sets it", "in a shell of its own"},
	}
	for id, parts := range reasons {
		i := slices.IndexFunc(res.Warnings, func(w string) bool { return strings.HasPrefix(w, id+" ") })
		if i < 0 {
			t.Errorf("%s: no warning in %q", id, res.Warnings)
			continue
		}
		for _, p := range parts {
			if !strings.Contains(res.Warnings[i], p) {
				t.Errorf("%s: the warning lacks %q: %s", id, p, res.Warnings[i])
			}
		}
	}
	// N41's match task has no example; no other task warns.
	if len(res.Warnings) != len(wantCannot)+1 {
		t.Errorf("warnings: %q", res.Warnings)
	}
}

// The rules say what AgentBench's own checkers accept: answers written as
// a rule says pass them, and the answers a model wrote that the rule
// rules out fail them (python3 runs each checker as the benchmark does:
// the answer, then the expected output).
func TestFormatsSayWhatTheCheckersAccept(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 runs the checkers:", err)
	}
	dir := "../../testdata/agentbench-os/scripts/dev/check"
	for _, c := range []struct {
		checker, format, expected string
		pass, fail                []string
	}{
		{"integer-match.py", agentbench.IntegerFormat, "30\n", []string{"30", " 30\n", "+30"},
			[]string{"30. Bob sold 30 types", "30 types", "30.0", "thirty", "3,0"}},
		{"size-match.py", agentbench.SizeFormat, "4096\n", []string{"4096", "4K", " 4K\n"},
			[]string{"4KB", "4.0K", "4k", "4 KiB", "about 4K"}},
		{"string-match.py", agentbench.ExactFormat, "Alice\n", []string{"Alice", "  Alice\r\n"},
			[]string{"alice", "The name is Alice", `"Alice"`, "Alice."}},
		{"containing.py", agentbench.ContainingFormat, "Alice\n", []string{"Alice", "The name is Alice."}, []string{"alice"}},
		{"in.py", agentbench.PartFormat, "Alice Smith\n", []string{"Alice", "Alice Smith"}, []string{"Alice Smith."}},
	} {
		run := func(answer string) bool {
			return exec.Command("python3", filepath.Join(dir, c.checker), answer, c.expected).Run() == nil
		}
		for _, a := range c.pass {
			if !run(a) {
				t.Errorf("%s refuses %q, which %q allows", c.checker, a, c.format)
			}
		}
		for _, a := range c.fail {
			if run(a) {
				t.Errorf("%s accepts %q, which %q rules out", c.checker, a, c.format)
			}
		}
	}
}

// The class, not the cases: any way of making a setuid or setgid file, and
// any variable read where no script of the task sets it; and none of the
// ways that only look alike.
func TestCannotJudgeFindsTheClass(t *testing.T) {
	task := func(init, start, example, check string) string {
		return `{"description": "d", "create": {"init": ` + init + `}, "start": ` + start +
			`, "evaluation": {"check": ` + check + `, "example": ` + example + `}}`
	}
	for _, c := range []struct {
		task, why string // why is "" for a task that can be judged
	}{
		{task(`"chmod 4755 tool"`, `"true"`, `"true"`, `"true"`), "runs `chmod 4755 tool`"},
		{task(`"chmod -R 2770 /srv/shared"`, `"true"`, `"true"`, `"true"`), "runs `chmod -R 2770 /srv/shared`"},
		{task(`"touch f && chmod ug+s,o-w f"`, `"true"`, `"true"`, `"true"`), "runs `chmod ug+s,o-w f`"},
		{task(`"install -m 4755 /bin/true /usr/local/bin/t"`, `"true"`, `"true"`, `"true"`), "runs `install -m 4755"},
		{task(`"mkdir -m2775 /d"`, `"true"`, `"true"`, `"true"`), "runs `mkdir -m2775 /d`"},
		{task(`{"language": "python", "code": "import os\nos.chmod('t', 0o4755)"}`, `"true"`, `"true"`, `"true"`), "sets a setuid or setgid mode"},
		{task(`"apt-get update && apt-get install -y passwd"`, `"true"`, `"true"`, `"true"`), "installs passwd"},
		// Not setuid: the sticky bit, taking s away, o+s (which does nothing).
		{task(`"chmod 1777 /tmp/x && chmod a-s f && chmod o+s f && chmod -s f && chmod 0755 f"`, `"true"`, `"true"`, `"true"`), ""},
		// The start script's variable reaches the agent's shell, not the check.
		{task(`"true"`, `"export LIMIT=3"`, `"echo $LIMIT"`, `[null, "test \"$1\" = \"$LIMIT\""]`), "$LIMIT is read by evaluation.check 1 (the example solution, run for the expected output) and evaluation.check 2, but only start sets it"},
		// One init script's export does not reach the next.
		{task(`["export ROOT=/srv/data", "mkdir -p \"${ROOT}/in\""]`, `"true"`, `"true"`, `"true"`), "$ROOT is read by create.init 2, but only create.init 1 sets it"},
		// A check that reads what nothing sets.
		{task(`"true"`, `"true"`, `"true"`, `{"language": "python", "code": "import os\nexit(os.environ['WANT'] != 'x')"}`), "$WANT is read by evaluation.check 1, but none of the task's scripts sets it"},
		// The agent's shell has what start set; awk's fields, escaped
		// dollars, comments, arithmetic, read and for are no variables of
		// the shell's, or set where they are read.
		{task(`"for ((d = 1; d <= 3; d++)); do n=$((d + 1)); mkdir dir_$d; done; read -r line < /etc/hostname; echo \"$line\""`, `"var=3.14"`,
			`"test \"$var\" -eq 1 2>/dev/null; awk '{s += $NF} END {print s}' f; echo \\$PRICE # uses $COMMENTED"`,
			`"for f in *; do echo \"$f\"; done; echo $HOME $PWD $RANDOM"`), ""},
	} {
		f := filepath.Join(t.TempDir(), "t.json")
		if err := os.WriteFile(f, []byte(c.task), 0o644); err != nil {
			t.Fatal(err)
		}
		res, s := importSuite(t, agentbench.Options{Paths: []string{f}})
		labelled := slices.Contains(s.Cases[0].Labels, agentbench.CannotJudge)
		if labelled != (c.why != "") || (c.why != "" && (len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], c.why))) {
			t.Errorf("%s: labelled %v, warnings %q; want %q", c.task, labelled, res.Warnings, c.why)
		}
	}
}
