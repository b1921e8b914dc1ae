package tokens

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
)

// The embedded vocabulary is the one OpenAI publishes, token for token and
// rank for rank: written back in OpenAI's format (base64 token, space,
// rank, one line each) it is OpenAI's file byte for byte.
func TestEmbeddedVocabularyIsOpenAIs(t *testing.T) {
	ranks, err := vocabulary()
	if err != nil {
		t.Fatal(err)
	}
	if len(ranks) != 199_998 {
		t.Fatalf("%d tokens, want o200k_base's 199998", len(ranks))
	}
	tokens := make([]string, len(ranks))
	for tok, rank := range ranks {
		if rank < 0 || rank >= len(tokens) || tokens[rank] != "" {
			t.Fatalf("rank %d of %q is out of place", rank, tok)
		}
		tokens[rank] = tok
	}
	h := sha256.New()
	for rank, tok := range tokens {
		fmt.Fprintf(h, "%s %d\n", base64.StdEncoding.EncodeToString([]byte(tok)), rank)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d" {
		t.Errorf("o200k_base.tiktoken's sha256 is %s", got)
	}
}

// Text is split by o200k_base's merges, not by bytes: the ids are the ones
// OpenAI's tokenizer gives, and a count is not bytes divided by 4.
func TestCountIsBPE(t *testing.T) {
	if ids := enc().EncodeOrdinary("hello world"); !slices.Equal(ids, []int{24912, 2375}) {
		t.Errorf("hello world: %v, want [24912 2375]", ids)
	}
	if n := Count("openai:gpt-4o", "hello world"); n != 2 {
		t.Errorf("hello world: %d tokens", n)
	}
	// A word repeated is one token a time; its bytes would say 2 each.
	if n := Count("x", strings.Repeat(" hello", 1000)); n != 1000 {
		t.Errorf("1000 × ' hello': %d tokens", n)
	}
	// Special tokens in text are text, not a failure.
	if n := Count("x", "<|endoftext|>"); n < 2 {
		t.Errorf("<|endoftext|> counted as %d tokens", n)
	}
	// Another vocabulary is refused rather than downloaded.
	if _, err := (embedded{}).LoadTiktokenBpe("https://example.invalid/cl100k_base.tiktoken"); err == nil || !strings.Contains(err.Error(), "only o200k_base") {
		t.Errorf("cl100k_base: %v", err)
	}
}

// A reply without usage gets Saucer's count, marked estimated; a reply
// with usage keeps the provider's.
func TestCountedFillsMissingUsage(t *testing.T) {
	script, err := scripted.Parse([]byte(`
replies:
  - {text: "Done: hello world", usage: {prompt_tokens: 0, completion_tokens: 0}}
  - {text: "again", usage: {prompt_tokens: 7, completion_tokens: 3}}
`), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := Counted(scripted.New(*script), "openai-compatible:local")
	req := &llm.Request{Messages: []llm.Message{llm.System("You are terse."), llm.User(strings.Repeat(" hello", 100))},
		Tools: []llm.Tool{{Name: "finish", Description: "End.", Parameters: []byte(`{"type":"object"}`)}}}
	resp, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := Request("openai-compatible:local", req)
	if u := resp.Usage; !u.Estimated || u.PromptTokens != want || u.CompletionTokens != Count("", "Done: hello world") || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("usage %+v, want %d prompt tokens, estimated", u, want)
	}
	if want < 100 || want > 130 {
		t.Errorf("a request of 100 ' hello' counted as %d tokens", want)
	}
	resp, err = m.Stream(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if u := resp.Usage; u.Estimated || u.PromptTokens != 7 || u.CompletionTokens != 3 {
		t.Errorf("reported usage changed: %+v", u)
	}
}

func BenchmarkCount(b *testing.B) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog 0123456789.\n", 20000) // ~1 MB
	Count("", "warm up")
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Count("", text)
	}
}
