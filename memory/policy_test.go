package memory

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

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
			Policy{Preset: Balanced, Summary: SummaryDeterministic, HeadLines: 60, HeadBytes: 4 << 10, ShowBytes: 64 << 10, FoldBytes: 4 << 10, LineChars: 200}},
		{"economy", Policy{Preset: Economy},
			Policy{Preset: Economy, Summary: SummaryDeterministic, HeadLines: 8, HeadBytes: 640, ShowBytes: 16 << 10, FoldBytes: 3 << 10, LineChars: 200}},
		{"full keeps results whole", Policy{Preset: Full, Summary: SummaryModel},
			Policy{Preset: Full, Summary: SummaryModel, ShowBytes: 64 << 10, FoldBytes: 256 << 10, LineChars: 200}},
		{"a preset's field set stays", Policy{Preset: Economy, HeadLines: 12, FoldBytes: 9000},
			Policy{Preset: Economy, Summary: SummaryDeterministic, HeadLines: 12, ShowBytes: 16 << 10, FoldBytes: 9000, LineChars: 200}},
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

// A result over the bounds keeps its first and last whole lines, two
// thirds of the room to the head; the stand-in between says which bytes
// are left out and how to read exactly them.
func TestShortenKeepsHeadAndTail(t *testing.T) {
	a := &Artifacts{}
	ls := listing(40)
	lines := strings.SplitAfter(ls, "\n")
	shown := a.Shorten(ls, 9, 1024)
	head, rest, ok := strings.Cut(shown, "\n…[artifact ")
	stand, tail, _ := strings.Cut(rest, "]\n")
	if !ok || head+"\n" != strings.Join(lines[:6], "") || tail != strings.Join(lines[37:], "") {
		t.Fatalf("shown %q: want the first 6 lines and the last 3 around the stand-in", shown)
	}
	from, to := len(head)+1, len(ls)-len(tail)
	if !strings.Contains(stand, fmt.Sprintf("31 of 40 lines (bytes %d to %d of %d) are left out here", from, to, len(ls))) {
		t.Errorf("stand-in %q does not say what is left out", stand)
	}
	got, err := a.Read(ReadArgs{Handle: handleOf(t, shown), Offset: from, Length: to - from})
	if _, body, _ := strings.Cut(got, "\n"); err != nil || head+"\n"+body+tail != ls {
		t.Errorf("the range the stand-in names does not fill the gap: %q %v", got, err)
	}
	// The byte bound cuts at whole lines within it: a line of 50 bytes,
	// 100 bytes of room: one line of head (66 bytes), none whole of tail
	// (33): the tail is the end of the last line.
	shown = a.Shorten(ls, 8, 100)
	head, rest, _ = strings.Cut(shown, "\n…[artifact ")
	_, tail, _ = strings.Cut(rest, "]\n")
	if len(head) > 66 || strings.Count(head, "\n") != 0 || len(tail) > 33 || !strings.HasSuffix(ls, tail) || tail == "" {
		t.Errorf("within 100 bytes: head %q, tail %q", head, tail)
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
	// One long line: its start and its end, cut at characters.
	long := strings.Repeat("é", 1000)
	shown = a.Shorten(long, 4, 300)
	head, rest, _ = strings.Cut(shown, "\n…[artifact ")
	_, tail, _ = strings.Cut(rest, "]\n")
	if !utf8.ValidString(head) || !utf8.ValidString(tail) || len(head) < 190 || len(tail) < 90 || !strings.HasSuffix(long, tail) {
		t.Errorf("one long line: head %d bytes, tail %d bytes", len(head), len(tail))
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
	if err := json.Unmarshal(got, &v); err != nil || !strings.HasPrefix(v.Stdout, ls[:100]) || !strings.HasSuffix(v.Stdout, "file39\n") || strings.Count(v.Stdout, "\n") != 9 {
		t.Fatalf("%s: want the JSON with stdout cut to its head and tail (%v)", got, err)
	}
	whole, err := a.Read(ReadArgs{Handle: handleOf(t, v.Stdout), Length: 10_000})
	if err != nil || !strings.HasSuffix(whole, ls[len(ls)-200:]) {
		t.Errorf("the stdout kept aside reads back as itself: %q %v", whole, err)
	}
	// A truncated flag says the value was cut.
	flagged, _ := json.Marshal(map[string]any{"stdout": ls, "truncated": false})
	var f struct{ Truncated bool }
	if err := json.Unmarshal(a.ShortenJSON(flagged, 8, 512), &f); err != nil || !f.Truncated {
		t.Errorf("cut, the result still says truncated: false (%v)", err)
	}
	small := []byte(`{"exit_code": 0, "stdout": "ok", "truncated": false}`)
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
