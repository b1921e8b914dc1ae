package knowledge

import (
	"context"
	"fmt"
	"net/http"
	"sort"

	openai "github.com/sashabaranov/go-openai"
)

// Embedder turns texts into vectors, one per text, in order. Model names
// the embedding model: vectors of different models are never compared.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Model() string
}

// OpenAIEmbedder asks an OpenAI-compatible embeddings endpoint (OpenAI's,
// or Ollama's at http://localhost:11434/v1).
type OpenAIEmbedder struct {
	client *openai.Client
	model  string
}

// NewOpenAIEmbedder embeds with model at baseURL (empty: OpenAI's) with
// apiKey (Ollama takes any). httpClient nil means http.DefaultClient.
func NewOpenAIEmbedder(baseURL, apiKey, model string, httpClient *http.Client) *OpenAIEmbedder {
	cfg := openai.DefaultConfig(apiKey)
	if baseURL != "" {
		cfg.BaseURL = baseURL
	}
	if httpClient != nil {
		cfg.HTTPClient = httpClient
	}
	return &OpenAIEmbedder{client: openai.NewClientWithConfig(cfg), model: model}
}

// Model is the embedding model's name.
func (o *OpenAIEmbedder) Model() string { return o.model }

// Embed asks for the texts' embeddings in one request.
func (o *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	res, err := o.client.CreateEmbeddings(ctx, openai.EmbeddingRequestStrings{Input: texts, Model: openai.EmbeddingModel(o.model)})
	if err != nil {
		return nil, fmt.Errorf("embeddings from %s: %w (check the provider's base_url and api_key, and that the model embeds)", o.model, err)
	}
	if len(res.Data) != len(texts) {
		return nil, fmt.Errorf("embeddings from %s: %d vectors for %d texts", o.model, len(res.Data), len(texts))
	}
	data := res.Data
	sort.Slice(data, func(i, j int) bool { return data[i].Index < data[j].Index })
	out := make([][]float32, len(texts))
	for i, d := range data {
		if d.Index != i || len(d.Embedding) == 0 {
			return nil, fmt.Errorf("embeddings from %s: vector %d is missing or empty", o.model, i)
		}
		out[i] = d.Embedding
	}
	return out, nil
}
