package knowledge

import (
	"slices"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/internal/tokens"
)

// ForPrompt gives the best entries within the budget, sources named, the
// same text for the same store and request (a replayed prompt is the
// recorded one).
func TestForPromptIsStableAndNamesSources(t *testing.T) {
	eachStore(t, testForPromptIsStableAndNamesSources)
}

func testForPromptIsStableAndNamesSources(t *testing.T, open opener) {
	ctx := testCtx(t)
	s := withSample(t, open(t, nil))
	text, used, err := s.ForPrompt(ctx, "count the lines of data.csv", "", 400)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, promptHead) || len(used) == 0 {
		t.Fatalf("prompt text:\n%s\nused %v", text, used)
	}
	if n := tokens.Count(tokenModel, text); n > 400 {
		t.Errorf("%d tokens, budget 400", n)
	}
	for i, src := range used {
		if !strings.Contains(text, "Source: "+src.String()+"\n") {
			t.Errorf("source %d (%s) is not named in the text", i+1, src)
		}
	}
	if !strings.Contains(text, "### 1. experience (succeeded): How many lines does data.csv have?\nSource: runs/a events 1-26 (host)\n") &&
		!strings.Contains(text, "### 1. experience (succeeded): Count the lines of data.csv with wc -l.\nSource: runs/a events 6-17 (app:shell#1 steps 1)\n") {
		t.Errorf("the best entry is not first:\n%s", text)
	}
	s.Close()

	// Reopened (as a replay would), the same text, byte for byte.
	s2 := open(t, nil)
	for range 3 {
		again, used2, err := s2.ForPrompt(ctx, "count the lines of data.csv", "", 400)
		if err != nil || again != text || !slices.EqualFunc(used, used2, func(a, b Source) bool { return a.String() == b.String() }) {
			t.Fatalf("a second time:\n%s\n(%v)", again, err)
		}
	}

	// An app agent is given its app's entries only; a failed run says so.
	text, used, _ = s2.ForPrompt(ctx, "write the hello note", "files", 1000)
	if len(used) == 0 || !strings.Contains(text, "failed: what not to do") || strings.Contains(text, "runs/a") {
		t.Errorf("for the files app:\n%s", text)
	}
	if text, used, err := s2.ForPrompt(ctx, "  ", "", 1000); text != "" || used != nil || err != nil {
		t.Errorf("an empty request: %q %v %v", text, used, err)
	}
	if text, _, _ := s2.ForPrompt(ctx, "count lines", "", 30); text != "" {
		t.Errorf("a budget too small for one entry gave:\n%s", text)
	}
}
