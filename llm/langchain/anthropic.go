package langchain

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/internal/httpmeta"
	"github.com/tmc/langchaingo/llms/anthropic"
)

// DefaultAnthropicBaseURL is the Anthropic API root used when
// Config.BaseURL is empty.
const DefaultAnthropicBaseURL = "https://api.anthropic.com"

// Config configures NewAnthropic.
type Config struct {
	// APIKey is sent as x-api-key. Required: unlike langchaingo, this
	// package never reads it from the environment behind the caller's back.
	APIKey string
	// BaseURL is the API root as Anthropic's SDKs take it (and as
	// ANTHROPIC_BASE_URL holds it), https://api.anthropic.com; a trailing
	// /v1 is accepted too. Empty means DefaultAnthropicBaseURL.
	BaseURL string
	// Model is the model name, such as claude-sonnet-4-5.
	Model string
	// Headers are added to every request (for gateways and proxies).
	Headers map[string]string
	// HTTPClient sends the requests; nil means one that enforces Timeouts.
	HTTPClient *http.Client
	// Timeouts bound each request; zero fields take httpmeta's defaults.
	Timeouts llm.Timeouts
}

// NewAnthropic returns a Model for Anthropic's Messages API, built on
// langchaingo's anthropic provider. It makes no network call.
func NewAnthropic(cfg Config) (*Model, error) {
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("anthropic: no API key given")
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, fmt.Errorf("anthropic: no model name given, e.g. claude-sonnet-4-5")
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultAnthropicBaseURL
	}
	// langchaingo appends /messages to a base that already ends in /v1.
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	doer := httpmeta.NewDoer(cfg.HTTPClient, cfg.Timeouts, cfg.Headers)
	doer.StreamEnd, doer.Stream = []byte(`"message_stop"`), coalesceToolInput
	inner, err := anthropic.New(
		anthropic.WithToken(cfg.APIKey),
		anthropic.WithModel(cfg.Model),
		anthropic.WithBaseURL(base),
		anthropic.WithHTTPClient(doer),
	)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	m := New(inner, "anthropic")
	m.modelName = cfg.Model
	m.apiKey = cfg.APIKey
	m.timeouts = cfg.Timeouts
	m.onePartPerAssistantTurn = true
	m.native = &native{doer: doer, url: base + "/messages", apiKey: cfg.APIKey, model: cfg.Model, version: anthropicVersion}
	return m, nil
}
