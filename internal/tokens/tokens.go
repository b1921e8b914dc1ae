// Package tokens counts tokens with a real BPE tokenizer, offline: OpenAI's
// o200k_base vocabulary (the encoding of gpt-4o, gpt-4.1, gpt-5 and the o
// series) is embedded, compressed (0.78 MB of the binary), and read the
// first time something is counted.
//
// Saucer counts when a model's server reports no token usage: the counts
// stand in for the provider's, marked llm.Usage.Estimated. For models of
// other families (Claude, Llama, Qwen, ...) o200k_base is an estimate too:
// their tokenizers differ by some tens of percent.
package tokens

import (
	"bytes"
	"compress/bzip2"
	_ "embed"
	"fmt"
	"io"
	"path"
	"sync"

	"github.com/pkoukk/tiktoken-go"

	"github.com/saucerhq/saucer/llm"
)

// Encoding is the BPE encoding every count uses.
const Encoding = tiktoken.MODEL_O200K_BASE

// o200k is the vocabulary of o200k_base.tiktoken as OpenAI publishes it,
// in the smallest form the standard library decodes: the tokens in rank
// order (ranks 0, 1, 2, ...), each as one byte of length and its bytes,
// bzip2-compressed. OpenAI's file holds the same tokens base64-encoded, one
// "token rank" line each, and gzipped it took 1.7 MB of the binary, over
// twice as much. TestEmbeddedVocabularyIsOpenAIs rebuilds OpenAI's file
// from it and checks its sha256; see NOTICE for its source and licence.
//
//go:embed o200k_base.bz2
var o200k []byte

// Per-message and per-request overheads of OpenAI's chat format (a
// message's role and separators; the reply's priming), and what one image
// costs at high detail for a 1024×1024 picture: 85 + 4 tiles of 170.
const (
	perMessage = 3
	perRequest = 3
	perImage   = 765
)

func init() {
	// tiktoken-go's own loader downloads vocabularies; this one serves
	// the embedded one and refuses the rest, for every user of the
	// library in the process (langchaingo counts with it too).
	tiktoken.SetBpeLoader(embedded{})
}

// embedded serves o200k_base from the binary and nothing from the network.
type embedded struct{}

func (embedded) LoadTiktokenBpe(file string) (map[string]int, error) {
	if name := path.Base(file); name != Encoding+".tiktoken" {
		return nil, fmt.Errorf("tokens: only %s is embedded, not %s", Encoding, name)
	}
	return vocabulary()
}

// vocabulary decodes o200k into tiktoken's ranks, token bytes to rank.
func vocabulary() (map[string]int, error) {
	data, err := io.ReadAll(bzip2.NewReader(bytes.NewReader(o200k)))
	if err != nil {
		return nil, fmt.Errorf("tokens: the embedded %s is broken: %w", Encoding, err)
	}
	ranks := make(map[string]int, 200_000)
	for len(data) > 0 {
		n := int(data[0])
		if n == 0 || 1+n > len(data) {
			return nil, fmt.Errorf("tokens: the embedded %s is broken at rank %d", Encoding, len(ranks))
		}
		ranks[string(data[1:1+n])] = len(ranks)
		data = data[1+n:]
	}
	return ranks, nil
}

var (
	loadOnce sync.Once
	encoder  *tiktoken.Tiktoken
)

func enc() *tiktoken.Tiktoken {
	loadOnce.Do(func() {
		var err error
		if encoder, err = tiktoken.GetEncoding(Encoding); err != nil {
			// The vocabulary is part of the binary: this is a broken
			// build, not a condition to work around.
			panic(err)
		}
	})
	return encoder
}

// Count is how many tokens text takes for model. Every model is counted in
// o200k_base: exact for OpenAI's current models, an estimate for others.
// Special tokens written in the text count as text.
func Count(model, text string) int {
	if text == "" {
		return 0
	}
	return len(enc().EncodeOrdinary(text))
}

// Message is how many tokens one message takes in a request: its text,
// tool calls and images, and the chat format's overhead.
func Message(model string, m llm.Message) int {
	n := perMessage + Count(model, m.Content) + Count(model, m.Name) + perImage*len(m.Images)
	for _, c := range m.ToolCalls {
		n += Count(model, c.Name) + Count(model, c.Arguments)
	}
	return n
}

// Request is how many prompt tokens a request takes: its messages and
// its tools' names, descriptions and schemas.
func Request(model string, req *llm.Request) int {
	n := perRequest
	for _, m := range req.Messages {
		n += Message(model, m)
	}
	for _, t := range req.Tools {
		n += Count(model, t.Name) + Count(model, t.Description) + Count(model, string(t.Parameters))
	}
	return n
}
