// Package openai is the llm.Model for OpenAI's chat-completions API and every
// server that speaks it: OpenAI itself, Azure OpenAI, Ollama, vLLM, LM Studio.
// It sits on github.com/sashabaranov/go-openai; nothing outside this package
// sees that SDK, so it can be swapped by changing this package alone.
//
// A *Model holds no per-request state: messages, tools and options travel in
// each llm.Request, so one Model may serve many goroutines at once.
package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/internal/httpmeta"
)

// DefaultAzureAPIVersion is the Azure OpenAI REST API version used when
// Config.APIVersion is empty: the generally-available version that supports
// tools, images and JSON mode.
const DefaultAzureAPIVersion = "2024-10-21"

// Config says where a Model sends its requests and how it authenticates.
type Config struct {
	// APIKey is sent as a bearer token (or as the api-key header on Azure).
	// It may be empty for servers that need none, such as a local Ollama.
	APIKey string
	// BaseURL is the API root including its version path, such as
	// https://api.openai.com/v1 or http://localhost:11434/v1. Empty means
	// OpenAI's. On Azure it is the resource endpoint,
	// https://NAME.openai.azure.com.
	BaseURL string
	// Model is the model name; on Azure, the deployment name.
	Model string
	// Azure selects Azure OpenAI's URL layout and api-key authentication.
	Azure bool
	// APIVersion is Azure's api-version query parameter; empty means
	// DefaultAzureAPIVersion. Ignored elsewhere.
	APIVersion string
	// Organization is sent as the OpenAI-Organization header when set.
	Organization string
	// Headers are added to every request (for gateways and proxies).
	Headers map[string]string
	// HTTPClient sends the requests; nil means one that enforces Timeouts.
	HTTPClient *http.Client
	// Timeouts bound each request (connect, first byte, idle gap, total);
	// zero fields take httpmeta's defaults, which suit slow local models.
	Timeouts llm.Timeouts
	// ProviderName names the provider in errors ("openai", "azure",
	// "ollama", ...); empty means "openai", or "azure" when Azure is set.
	ProviderName string
}

// Model is an llm.Model over an OpenAI-compatible chat-completions endpoint.
type Model struct {
	client   *goopenai.Client
	model    string
	provider string
	apiKey   string // kept only to scrub it out of error text
	timeouts llm.Timeouts
	// responses sends computer-use requests to the Responses API
	// (responses.go); nil where there is none (Azure, other servers).
	responses *responsesClient
}

var _ llm.Model = (*Model)(nil)

// New returns a Model for cfg. It checks the configuration but makes no
// network call.
func New(cfg Config) (*Model, error) {
	provider := cfg.ProviderName
	if provider == "" {
		provider = "openai"
		if cfg.Azure {
			provider = "azure"
		}
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, fmt.Errorf("%s: no model name given: name a model (a deployment name on Azure)", provider)
	}

	var cc goopenai.ClientConfig
	if cfg.Azure {
		if cfg.BaseURL == "" {
			return nil, fmt.Errorf("%s: no endpoint given: Azure OpenAI needs the resource endpoint, e.g. https://NAME.openai.azure.com", provider)
		}
		cc = goopenai.DefaultAzureConfig(cfg.APIKey, cfg.BaseURL)
		cc.APIVersion = cfg.APIVersion
		if cc.APIVersion == "" {
			cc.APIVersion = DefaultAzureAPIVersion
		}
		// Model is the deployment name already; go-openai's default mapper
		// would strip dots and colons from it.
		cc.AzureModelMapperFunc = func(model string) string { return model }
	} else {
		cc = goopenai.DefaultConfig(cfg.APIKey)
		if cfg.BaseURL != "" {
			cc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
		}
	}
	cc.OrgID = cfg.Organization

	doer := httpmeta.NewDoer(cfg.HTTPClient, cfg.Timeouts, cfg.Headers)
	doer.Fix = fixDialects
	cc.HTTPClient = doer

	m := &Model{
		client:   goopenai.NewClientWithConfig(cc),
		model:    cfg.Model,
		provider: provider,
		apiKey:   cfg.APIKey,
		timeouts: cfg.Timeouts,
	}
	if provider == "openai" && !cfg.Azure {
		m.responses = &responsesClient{doer: doer, url: cc.BaseURL + "/responses", apiKey: cfg.APIKey, org: cfg.Organization}
	}
	return m, nil
}

// Complete sends req and returns the whole reply.
func (m *Model) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if req != nil && req.Computer != nil {
		return m.completeResponses(ctx, req, nil)
	}
	creq, err := m.chatRequest(req)
	if err != nil {
		return nil, err
	}
	ctx, meta := httpmeta.With(ctx)
	resp, err := m.client.CreateChatCompletion(ctx, creq)
	if err != nil {
		return nil, m.mapError(ctx, err, meta)
	}
	if len(resp.Choices) == 0 {
		return nil, m.emptyReply("the reply had no choices")
	}
	choice := resp.Choices[0]
	out := &llm.Response{
		Message:      llm.Message{Role: llm.RoleAssistant, Content: choice.Message.Content},
		FinishReason: string(choice.FinishReason),
		Model:        resp.Model,
		Usage:        usage(&resp.Usage),
	}
	if out.Message.Content == "" {
		// A refusal is the model's answer in words; hand it on rather than
		// reporting an empty reply that a caller would retry in vain.
		out.Message.Content = choice.Message.Refusal
	}
	for _, tc := range choice.Message.ToolCalls {
		out.Message.ToolCalls = append(out.Message.ToolCalls, llm.ToolCall{
			ID:        tc.ID,
			Name:      tc.Function.Name,
			Arguments: tc.Function.Arguments,
		})
	}
	llm.FixCallIDs(out.Message.ToolCalls)
	if out.Message.Content == "" && len(out.Message.ToolCalls) == 0 && llm.Unfinished(out) == "" {
		return nil, m.emptyReply(fmt.Sprintf("no text and no tool calls (finish reason %q)", out.FinishReason))
	}
	return out, nil
}

// Stream sends req as a streaming request, calls onChunk for every text and
// tool-call fragment as it arrives, and returns the accumulated reply, which
// is the same Response that Complete would have returned.
func (m *Model) Stream(ctx context.Context, req *llm.Request, onChunk func(llm.Chunk)) (*llm.Response, error) {
	if req != nil && req.Computer != nil {
		if onChunk == nil {
			onChunk = func(llm.Chunk) {}
		}
		return m.completeResponses(ctx, req, onChunk)
	}
	creq, err := m.chatRequest(req)
	if err != nil {
		return nil, err
	}
	creq.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
	ctx, meta := httpmeta.With(ctx)
	stream, err := m.client.CreateChatCompletionStream(ctx, creq)
	if err != nil {
		return nil, m.mapError(ctx, err, meta)
	}
	defer stream.Close()

	var acc accumulator
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, m.mapError(ctx, err, meta)
		}
		acc.add(chunk, onChunk)
	}
	out := acc.response()
	llm.FixCallIDs(out.Message.ToolCalls)
	if out.FinishReason == "" {
		// The stream ended without the provider saying the reply was done:
		// it was cut off in transit, and is not a reply to act on.
		out.FinishReason = llm.FinishIncomplete
	}
	if out.Message.Content == "" && len(out.Message.ToolCalls) == 0 && llm.Unfinished(out) == "" {
		return nil, m.emptyReply(fmt.Sprintf("no text and no tool calls in the stream (finish reason %q)", out.FinishReason))
	}
	return out, nil
}

func (m *Model) emptyReply(why string) error {
	return &llm.Error{Kind: llm.KindEmptyReply, Provider: m.provider, Message: why}
}

func usage(u *goopenai.Usage) llm.Usage {
	out := llm.Usage{
		PromptTokens:     u.PromptTokens,
		CompletionTokens: u.CompletionTokens,
		TotalTokens:      u.TotalTokens,
	}
	if u.PromptTokensDetails != nil {
		out.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	return out
}
