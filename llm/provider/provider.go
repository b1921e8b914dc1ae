// Package provider opens an llm.Model from one string, PROVIDER:MODEL, such
// as "openai:gpt-4o", "ollama:qwen2.5" or "scripted:testdata/run.yaml", with
// keys and endpoints taken from the config file's provider settings or, where
// those are empty, from the environment.
package provider

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/langchain"
	"github.com/saucerhq/saucer/llm/openai"
	"github.com/saucerhq/saucer/llm/scripted"
)

// Settings configure one provider: the config file's providers.NAME entry.
// A non-empty field wins over the provider's environment variable.
type Settings struct {
	APIKey       string            `yaml:"api_key,omitempty" json:"api_key,omitempty"`
	BaseURL      string            `yaml:"base_url,omitempty" json:"base_url,omitempty"`
	APIVersion   string            `yaml:"api_version,omitempty" json:"api_version,omitempty"`
	Organization string            `yaml:"organization,omitempty" json:"organization,omitempty"`
	Headers      map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// Timeouts bound each request to this provider (connect, first_byte,
	// idle, total); zero fields take llm.DefaultTimeouts.
	Timeouts llm.Timeouts `yaml:"timeouts,omitempty" json:"timeouts,omitzero"`
}

// Defaults for the providers that have a well-known endpoint.
const (
	DefaultOpenAIBaseURL = "https://api.openai.com/v1"
	DefaultOllamaHost    = "http://localhost:11434"
)

// opener builds one provider's model; name is the provider as written in
// the spec, so errors and settings use it.
type opener func(name, model string, s Settings, env func(string) string) (llm.Model, error)

var openers = map[string]opener{
	"openai":            openOpenAI,
	"azure":             openAzure,
	"ollama":            openOllama,
	"anthropic":         openAnthropic,
	"openai-compatible": openCompatible,
	"vllm":              openCompatible,
	"lmstudio":          openCompatible,
	"scripted":          openScripted,
}

// builtins lists the built-in providers for error messages, in a fixed
// order; registered ones follow, sorted.
const builtins = "openai, azure, ollama, anthropic, openai-compatible, vllm, lmstudio, scripted"

var (
	regMu      sync.RWMutex
	registered = map[string]Opener{}
)

// Opener opens a model of a registered provider: model is the part of the
// spec after "PROVIDER:", s the config file's providers.PROVIDER entry, env
// the environment. It must not send anything over the network.
type Opener func(model string, s Settings, env func(string) string) (llm.Model, error)

// Register adds a provider under its own prefix, so that "mycorp:model-x"
// opens through open wherever a model is named (config, --model, suites).
// A name already taken, built-in or registered, is an error.
func Register(name string, open Opener) error {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" || strings.ContainsAny(name, ": ") || open == nil {
		return fmt.Errorf("provider: Register needs a name without ':' or spaces, and an Opener (got %q)", name)
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, builtin := openers[name]; builtin {
		return fmt.Errorf("provider: %q is a built-in provider; register yours under another prefix", name)
	}
	if _, dup := registered[name]; dup {
		return fmt.Errorf("provider: %q is already registered (each prefix is registered once, e.g. in an init function)", name)
	}
	registered[name] = open
	return nil
}

// lookup finds a provider's opener, built-in or registered.
func lookup(name string) (opener, bool) {
	if o, ok := openers[name]; ok {
		return o, true
	}
	regMu.RLock()
	o, ok := registered[name]
	regMu.RUnlock()
	if !ok {
		return nil, false
	}
	return func(_, model string, s Settings, env func(string) string) (llm.Model, error) { return o(model, s, env) }, true
}

// known lists every provider for error messages.
func known() string {
	regMu.RLock()
	defer regMu.RUnlock()
	if len(registered) == 0 {
		return builtins
	}
	return builtins + ", " + strings.Join(slices.Sorted(maps.Keys(registered)), ", ")
}

// Describe splits spec into provider and model and checks both, without
// opening anything. The provider is matched without regard to case; the
// model is everything after the first colon ("ollama:qwen2.5:7b" names
// the model "qwen2.5:7b").
func Describe(spec string) (provider, model string, err error) {
	p, m, ok := strings.Cut(strings.TrimSpace(spec), ":")
	if !ok {
		return "", "", fmt.Errorf("model %q has no provider: write PROVIDER:MODEL, e.g. openai:gpt-4o or ollama:qwen2.5 (providers: %s)", spec, known())
	}
	p = strings.ToLower(strings.TrimSpace(p))
	m = strings.TrimSpace(m)
	if _, found := lookup(p); !found {
		return "", "", fmt.Errorf("model %q: unknown provider %q: use one of %s (or register yours with provider.Register)", spec, p, known())
	}
	if m == "" {
		what := "model name"
		if p == "scripted" {
			what = "script path"
		}
		return "", "", fmt.Errorf("model %q: no %s after %q", spec, what, p+":")
	}
	return p, m, nil
}

// Open returns the model spec names. settings are the config file's
// provider entries, by provider name (nil is fine); getenv reads the
// environment (nil means os.Getenv). Nothing is sent over the network.
func Open(spec string, settings map[string]Settings, getenv func(string) string) (llm.Model, error) {
	p, model, err := Describe(spec)
	if err != nil {
		return nil, err
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	open, _ := lookup(p)
	return open(p, model, settings[p], getenv)
}

// pick returns the setting if set, else the first non-empty environment
// variable among names.
func pick(setting string, env func(string) string, names ...string) string {
	if setting != "" {
		return setting
	}
	for _, n := range names {
		if v := strings.TrimSpace(env(n)); v != "" {
			return v
		}
	}
	return ""
}

func missing(provider, what, envVar, key string) error {
	return fmt.Errorf("%s: no %s: set %s or providers.%s.%s in the config", provider, what, envVar, provider, key)
}

func openOpenAI(name, model string, s Settings, env func(string) string) (llm.Model, error) {
	key := pick(s.APIKey, env, "OPENAI_API_KEY")
	if key == "" {
		return nil, missing(name, "API key", "OPENAI_API_KEY", "api_key")
	}
	base := pick(s.BaseURL, env, "OPENAI_BASE_URL")
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	return asModel(openai.New(openai.Config{Timeouts: s.Timeouts,
		APIKey:       key,
		BaseURL:      base,
		Model:        model,
		Organization: pick(s.Organization, env, "OPENAI_ORG_ID"),
		Headers:      s.Headers,
		ProviderName: name,
	}))
}

func openAzure(name, model string, s Settings, env func(string) string) (llm.Model, error) {
	key := pick(s.APIKey, env, "AZURE_OPENAI_API_KEY")
	if key == "" {
		return nil, missing(name, "API key", "AZURE_OPENAI_API_KEY", "api_key")
	}
	endpoint := pick(s.BaseURL, env, "AZURE_OPENAI_ENDPOINT")
	if endpoint == "" {
		return nil, missing(name, "endpoint", "AZURE_OPENAI_ENDPOINT", "base_url")
	}
	return asModel(openai.New(openai.Config{Timeouts: s.Timeouts,
		APIKey:       key,
		BaseURL:      endpoint,
		Model:        model, // the deployment name
		Azure:        true,
		APIVersion:   pick(s.APIVersion, env, "AZURE_OPENAI_API_VERSION", "OPENAI_API_VERSION"),
		Headers:      s.Headers,
		ProviderName: name,
	}))
}

func openOllama(name, model string, s Settings, env func(string) string) (llm.Model, error) {
	host := pick(s.BaseURL, env, "OLLAMA_HOST")
	if host == "" {
		host = DefaultOllamaHost
	}
	base, err := ollamaBaseURL(host)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (set OLLAMA_HOST or providers.%s.base_url, e.g. %s)", name, err, name, DefaultOllamaHost)
	}
	return asModel(openai.New(openai.Config{Timeouts: s.Timeouts,
		APIKey:       s.APIKey, // none unless a proxy in front wants one
		BaseURL:      base,
		Model:        model,
		Headers:      s.Headers,
		ProviderName: name,
	}))
}

// ollamaBaseURL turns an Ollama host as OLLAMA_HOST writes it ("host",
// "host:port", "http://host:port", maybe with a path) into the URL of its
// OpenAI-compatible API. Like Ollama's own client it assumes http and port
// 11434 when they are left out.
func ollamaBaseURL(host string) (string, error) {
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("bad Ollama host %q", host)
	}
	if u.Port() == "" && u.Scheme == "http" {
		u.Host = net.JoinHostPort(u.Hostname(), "11434")
	}
	u.Path = strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(u.Path, "/v1") {
		u.Path += "/v1"
	}
	return u.String(), nil
}

func openAnthropic(name, model string, s Settings, env func(string) string) (llm.Model, error) {
	key := pick(s.APIKey, env, "ANTHROPIC_API_KEY")
	if key == "" {
		return nil, missing(name, "API key", "ANTHROPIC_API_KEY", "api_key")
	}
	return asModel(langchain.NewAnthropic(langchain.Config{Timeouts: s.Timeouts,
		APIKey:  key,
		BaseURL: pick(s.BaseURL, env, "ANTHROPIC_BASE_URL"),
		Model:   model,
		Headers: s.Headers,
	}))
}

// openCompatible opens any other OpenAI-compatible server. Its environment
// variables are named after the provider: VLLM_BASE_URL, LMSTUDIO_API_KEY,
// OPENAI_COMPATIBLE_BASE_URL, ...
func openCompatible(name, model string, s Settings, env func(string) string) (llm.Model, error) {
	prefix := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	// Its own variables first, then OpenAI's, which such servers' users
	// usually have set already.
	base := pick(s.BaseURL, env, prefix+"_BASE_URL", "OPENAI_BASE_URL")
	if base == "" {
		return nil, fmt.Errorf("%s: no base URL: set OPENAI_BASE_URL (or %s_BASE_URL, or providers.%s.base_url in the config) to the server's OpenAI-compatible API, e.g. %s",
			name, prefix, name, exampleBaseURL[name])
	}
	return asModel(openai.New(openai.Config{Timeouts: s.Timeouts,
		APIKey:       pick(s.APIKey, env, prefix+"_API_KEY", "OPENAI_API_KEY"),
		BaseURL:      base,
		Model:        model,
		Organization: s.Organization,
		Headers:      s.Headers,
		ProviderName: name,
	}))
}

var exampleBaseURL = map[string]string{
	"vllm":              "http://localhost:8000/v1",
	"lmstudio":          "http://localhost:1234/v1",
	"openai-compatible": "http://localhost:8080/v1",
}

func openScripted(_, path string, _ Settings, _ func(string) string) (llm.Model, error) {
	return asModel(scripted.Load(path))
}

// asModel returns m as an llm.Model, or a nil interface on error: a nil
// *T in an interface would not compare equal to nil.
func asModel[T llm.Model](m T, err error) (llm.Model, error) {
	if err != nil {
		return nil, err
	}
	return m, nil
}
