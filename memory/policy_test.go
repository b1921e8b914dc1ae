package memory

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/llm"
)

func TestPolicyPresets(t *testing.T) {
	for _, c := range []struct {
		name string
		in   Policy
		want Policy
	}{
		{"none is balanced", Policy{},
			Policy{Preset: Balanced, Summary: SummaryDeterministic, HeadLines: 8, HeadBytes: 512, FoldBytes: 8 << 10, LineChars: 200}},
		{"economy", Policy{Preset: Economy},
			Policy{Preset: Economy, Summary: SummaryDeterministic, HeadLines: 4, HeadBytes: 320, FoldBytes: 5 << 10, LineChars: 200}},
		{"full keeps results whole", Policy{Preset: Full, Summary: SummaryModel},
			Policy{Preset: Full, Summary: SummaryModel, FoldBytes: 256 << 10, LineChars: 200}},
		{"a preset's field set stays", Policy{Preset: Economy, HeadLines: 12, FoldBytes: 9000},
			Policy{Preset: Economy, Summary: SummaryDeterministic, HeadLines: 12, FoldBytes: 9000, LineChars: 200}},
		// The config recorded before presets: it replays as it ran.
		{"recent without a preset is the window", Policy{Recent: 8, Condensed: 24, Block: 16, LineChars: 200},
			Policy{Preset: Window, Summary: SummaryDeterministic, Recent: 8, Condensed: 24, Block: 16, LineChars: 200}},
		{"window", Policy{Preset: Window}, DefaultPolicy.withSummary()},
	} {
		if got := c.in.WithDefaults(); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func (p Policy) withSummary() Policy { p.Summary = SummaryDeterministic; return p }

func TestPolicyCheck(t *testing.T) {
	for _, ok := range []Policy{{}, {Preset: Economy}, {Preset: Window, Recent: 4}, {Recent: 8, Condensed: 24, Block: 16}, {Summary: SummaryModel}} {
		if err := ok.Check(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	for _, c := range []struct {
		p    Policy
		says string
	}{
		{Policy{Preset: "cheap"}, `preset "cheap" is not economy, balanced, full or window`},
		{Policy{Summary: "llm"}, `summary "llm" is not deterministic or model`},
		{Policy{HeadLines: -1}, "must not be negative"},
		{Policy{Preset: Balanced, Recent: 4}, "recent, condensed and block belong to the window preset, not balanced: remove them, or set preset: window"},
	} {
		if err := c.p.Check(); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.says)
		}
	}
}

// listing is an `ls -la`-like output of n lines.
func listing(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "-rw-r--r--  1 root root %5d Aug 24  2025 file%02d\n", 100*i, i)
	}
	return b.String()
}

func TestShortenKeepsAHeadOfWholeLines(t *testing.T) {
	a := &Artifacts{}
	ls := listing(40)
	shown := a.Shorten(ls, 8, 512)
	head, stand, ok := strings.Cut(shown, "\n…[artifact ")
	if !ok || head != strings.Join(strings.SplitAfter(ls, "\n")[:8], "")[:len(head)] || strings.Count(head, "\n") != 7 {
		t.Fatalf("shown %q: want the first 8 lines, then the stand-in", shown)
	}
	if !strings.Contains(stand, fmt.Sprintf("%d of %d bytes shown, 8 of 40 lines", len(head), len(ls))) {
		t.Errorf("stand-in %q does not say what is shown", stand)
	}
	got, err := a.Read(ReadArgs{Handle: handleOf(t, shown), Grep: "file39"})
	if err != nil || !strings.Contains(got, "file39") {
		t.Errorf("reading the rest: %q %v", got, err)
	}
	// The byte bound cuts at the last whole line within it.
	shown = a.Shorten(ls, 8, 100)
	if head, _, _ := strings.Cut(shown, "\n…[artifact "); len(head) > 100 || strings.Count(head, "\n") != 1 {
		t.Errorf("within 100 bytes: %q, want the first two lines", head)
	}
	// What fits goes whole, a trailing newline included.
	for _, s := range []string{listing(8), strings.TrimSuffix(listing(8), "\n"), "ok"} {
		if got := a.Shorten(s, 8, 512); got != s {
			t.Errorf("%q was cut: %q", s, got)
		}
	}
	// No bound: whole.
	if got := a.Shorten(ls, 0, 0); got != ls {
		t.Errorf("unbounded: cut")
	}
}

func TestShortenJSONCutsEachString(t *testing.T) {
	a := &Artifacts{}
	ls := listing(40)
	raw, _ := json.Marshal(map[string]any{"stdout": ls, "exit_code": 0})
	got := a.ShortenJSON(raw, 8, 512)
	var v struct {
		Stdout   string `json:"stdout"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal(got, &v); err != nil || !strings.HasPrefix(v.Stdout, ls[:100]) || strings.Count(v.Stdout, "\n") != 8 {
		t.Fatalf("%s: want the JSON with stdout cut to its head (%v)", got, err)
	}
	whole, err := a.Read(ReadArgs{Handle: handleOf(t, v.Stdout), Length: 10_000})
	if err != nil || !strings.HasSuffix(whole, ls[len(ls)-200:]) {
		t.Errorf("the stdout kept aside reads back as itself: %q %v", whole, err)
	}
	small := []byte(`{"exit_code": 0, "stdout": "ok"}`)
	if got := a.ShortenJSON(small, 8, 512); string(got) != string(small) {
		t.Errorf("a value that needs no cut changed: %s", got)
	}
}

func TestFoldSummary(t *testing.T) {
	a := &Artifacts{}
	var steps []Step
	for i := 1; i <= 6; i++ {
		st := Step{Step: i, Reply: llm.Assistant("Listing.")}
		cmd := command.Command{ToolName: "execute_command", Parameters: map[string]any{"command": fmt.Sprintf("ls /d%d", i)}}
		st.Commands = []command.Command{cmd}
		if i == 2 {
			st.Results = []command.Result{command.Failed("c", "no such directory")}
		} else {
			st.Results = []command.Result{command.Succeeded("c", listing(30))}
		}
		steps = append(steps, st)
	}
	p := Policy{}
	got := p.FoldSummary(steps, a)
	for _, want := range []string{"Steps 1 to 6 are folded", "execute_command 6 (1 failed)", "- step 4:", "- step 6:", "artifact "} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "- step 3:") || strings.Contains(got, "file29") {
		t.Errorf("summary lists more than the last three steps, or a whole result:\n%s", got)
	}
	if again := p.FoldSummary(steps, &Artifacts{}); again != got {
		t.Errorf("the same steps gave another summary:\n%s\n%s", got, again)
	}
	got = p.ModelSummary(steps, "  Listed /d1 to /d6; /d2 is missing. ", a)
	if !strings.Contains(got, "which you wrote:\nListed /d1 to /d6; /d2 is missing.\nThe last of them:\n- step 4:") {
		t.Errorf("model summary:\n%s", got)
	}
}
