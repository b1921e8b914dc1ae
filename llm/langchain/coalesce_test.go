package langchain_test

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/saucerhq/saucer/llm/langchain"
)

// events splits an event stream into its data lines' JSON.
func events(t *testing.T, stream string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(stream, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("an event that is not JSON: %v: %.80q", err, data)
		}
		out = append(out, e)
	}
	return out
}

// toolInput joins the input_json_delta fragments of block index.
func toolInput(evs []map[string]any, index int) (input string, fragments int) {
	var b strings.Builder
	for _, e := range evs {
		d, _ := e["delta"].(map[string]any)
		if e["type"] == "content_block_delta" && d["type"] == "input_json_delta" && int(e["index"].(float64)) == index {
			b.WriteString(d["partial_json"].(string))
			fragments++
		}
	}
	return b.String(), fragments
}

// coalesceString coalesces in read through wrap (iotest's odd readers:
// events and lines split across reads must be whole again).
func coalesceString(t *testing.T, in string, wrap func(io.Reader) io.Reader) string {
	t.Helper()
	var out bytes.Buffer
	if err := langchain.Coalesce(&out, wrap(strings.NewReader(in))); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestCoalesceToolInput: 256 KB of tool input in 16-byte fragments
// (quotes, backslashes, newlines and non-ASCII among them) reaches
// langchaingo in fragments of at most langchain.CoalesceMax bytes, each a line its
// scanner can read, and joins to the same input; every other event keeps
// its place and its bytes.
func TestCoalesceToolInput(t *testing.T) {
	in := bigToolUseStream(256<<10, 16)
	in = strings.Replace(in, `"main.c"`, `"caf\u00e9 \"x\".c"`, 1) // escapes inside a fragment
	out := coalesceString(t, in, iotest.HalfReader)

	want, n := toolInput(events(t, in), 0)
	got, m := toolInput(events(t, out), 0)
	if got != want {
		t.Fatalf("the merged input differs: %d bytes, want %d", len(got), len(want))
	}
	if n < 15000 || m > (len(in)/langchain.CoalesceMax)+2 {
		t.Errorf("%d fragments became %d; want at most %d", n, m, len(in)/langchain.CoalesceMax+2)
	}
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 64<<10-1 {
			t.Fatalf("a line of %d bytes: langchaingo's scanner stops at 64 KB", len(line))
		}
	}
	// The events around the input are the same, in the same order.
	var before, after []string
	for _, e := range events(t, in) {
		if e["type"] != "content_block_delta" {
			b, _ := json.Marshal(e)
			before = append(before, string(b))
		}
	}
	for _, e := range events(t, out) {
		if e["type"] != "content_block_delta" {
			b, _ := json.Marshal(e)
			after = append(after, string(b))
		}
	}
	if strings.Join(before, "\n") != strings.Join(after, "\n") {
		t.Errorf("other events changed:\n%s\nwant\n%s", after, before)
	}
}

// TestCoalesceKeepsTextAndBlocksApart: text deltas stream as they came, and
// the fragments of two tool calls stay each with its own block.
func TestCoalesceKeepsTextAndBlocksApart(t *testing.T) {
	out := coalesceString(t, toolUseStream+sse(
		`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_02","name":"read_file","input":{}}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\": "}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"b.txt\"}"}}`,
	), iotest.OneByteReader)
	evs := events(t, out)
	var texts []string
	for _, e := range evs {
		if d, _ := e["delta"].(map[string]any); d["type"] == "text_delta" {
			texts = append(texts, d["text"].(string))
		}
	}
	if strings.Join(texts, "|") != "I'll read |the file." {
		t.Errorf("text deltas = %q", texts)
	}
	if in, n := toolInput(evs, 1); in != `{"path": "notes.txt", "max_lines": 20}` || n != 1 {
		t.Errorf("block 1: %q in %d fragments", in, n)
	}
	if in, n := toolInput(evs, 2); in != `{"path": "b.txt"}` || n != 1 {
		t.Errorf("block 2: %q in %d fragments (a stream that ends flushes what it holds)", in, n)
	}
}

// TestCoalesceCarriesAReadError: a connection that breaks mid-stream is an
// error for langchaingo, after what came before it.
func TestCoalesceCarriesAReadError(t *testing.T) {
	broken := io.MultiReader(strings.NewReader(toolUseStream[:len(toolUseStream)/2]), iotest.ErrReader(io.ErrUnexpectedEOF))
	r := langchain.CoalesceToolInput(io.NopCloser(broken))
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != io.ErrUnexpectedEOF {
		t.Errorf("err = %v, want the connection's", err)
	}
	if !strings.Contains(string(b), "I'll read ") {
		t.Errorf("what came before the break is lost: %q", b)
	}
}
