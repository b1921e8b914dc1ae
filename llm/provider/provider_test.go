package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/langchain"
	"github.com/saucerhq/saucer/llm/openai"
	"github.com/saucerhq/saucer/llm/provider"
	"github.com/saucerhq/saucer/llm/scripted"
)

func TestDescribe(t *testing.T) {
	good := []struct{ spec, provider, model string }{
		{"openai:gpt-4o", "openai", "gpt-4o"},
		{"OpenAI:gpt-4o", "openai", "gpt-4o"},
		{" ollama:qwen2.5:7b ", "ollama", "qwen2.5:7b"},
		{"azure:my-deployment", "azure", "my-deployment"},
		{"anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"},
		{"openai-compatible:local", "openai-compatible", "local"},
		{"vllm:Qwen/Qwen2.5-7B-Instruct", "vllm", "Qwen/Qwen2.5-7B-Instruct"},
		{"lmstudio:qwen2.5-7b-instruct", "lmstudio", "qwen2.5-7b-instruct"},
		{"scripted:C:/runs/a.yaml", "scripted", "C:/runs/a.yaml"},
	}
	for _, tt := range good {
		p, m, err := provider.Describe(tt.spec)
		if err != nil || p != tt.provider || m != tt.model {
			t.Errorf("Describe(%q) = %q, %q, %v; want %q, %q", tt.spec, p, m, err, tt.provider, tt.model)
		}
	}
	bad := []struct{ spec, mention string }{
		{"gpt-4o", "PROVIDER:MODEL"},
		{"", "PROVIDER:MODEL"},
		{"gemini:pro", "openai, azure, ollama, anthropic, openai-compatible, vllm, lmstudio, scripted"},
		{"openai:", "no model name"},
		{"scripted: ", "no script path"},
	}
	for _, tt := range bad {
		if _, _, err := provider.Describe(tt.spec); err == nil || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("Describe(%q): err = %v, want one mentioning %q", tt.spec, err, tt.mention)
		}
	}
}

// env is an environment for getenv, without touching the process's own.
type env map[string]string

func (e env) get(k string) string { return e[k] }

// seen is what the fake API saw of one request.
type seen struct {
	path, query, auth, apiKey, xAPIKey, org, custom string
	body                                            map[string]any
}

// fakeAPI answers both OpenAI chat completions and Anthropic messages with
// "pong", and records each request.
type fakeAPI struct {
	*httptest.Server
	mu   sync.Mutex
	seen []seen
}

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		s := seen{
			path: r.URL.Path, query: r.URL.RawQuery,
			auth: r.Header.Get("Authorization"), apiKey: r.Header.Get("Api-Key"), xAPIKey: r.Header.Get("X-Api-Key"),
			org: r.Header.Get("Openai-Organization"), custom: r.Header.Get("X-Team"),
		}
		_ = json.Unmarshal(raw, &s.body)
		f.mu.Lock()
		f.seen = append(f.seen, s)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/messages") {
			fmt.Fprint(w, `{"type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"pong"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`)
			return
		}
		fmt.Fprint(w, `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"pong"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) last(t *testing.T) seen {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) == 0 {
		t.Fatal("the fake API got no request")
	}
	return f.seen[len(f.seen)-1]
}

func ask(t *testing.T, m llm.Model) {
	t.Helper()
	resp, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("ping")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "pong" {
		t.Fatalf("reply %q, want pong", resp.Message.Content)
	}
}

// TestOpenEachProvider opens every provider with its environment and lets
// the opened model answer through a local server, checking where the
// request went and how it authenticated.
func TestOpenEachProvider(t *testing.T) {
	api := newFakeAPI(t)
	hostPort := strings.TrimPrefix(api.URL, "http://")
	tests := []struct {
		spec  string
		env   env
		check func(t *testing.T, s seen)
	}{
		{"openai:gpt-4o", env{"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": api.URL + "/v1", "OPENAI_ORG_ID": "org-env"}, func(t *testing.T, s seen) {
			if s.path != "/v1/chat/completions" || s.auth != "Bearer sk-env" || s.org != "org-env" || s.body["model"] != "gpt-4o" {
				t.Errorf("seen %+v", s)
			}
		}},
		{"azure:prod-gpt4o", env{"AZURE_OPENAI_API_KEY": "az-env", "AZURE_OPENAI_ENDPOINT": api.URL, "OPENAI_API_VERSION": "2024-06-01"}, func(t *testing.T, s seen) {
			if s.path != "/openai/deployments/prod-gpt4o/chat/completions" || s.query != "api-version=2024-06-01" || s.apiKey != "az-env" || s.auth != "" {
				t.Errorf("seen %+v", s)
			}
		}},
		{"azure:prod-gpt4o", env{"AZURE_OPENAI_API_KEY": "az-env", "AZURE_OPENAI_ENDPOINT": api.URL}, func(t *testing.T, s seen) {
			if s.query != "api-version="+openai.DefaultAzureAPIVersion {
				t.Errorf("query %q, want the default api-version", s.query)
			}
		}},
		{"azure:prod-gpt4o", env{"AZURE_OPENAI_API_KEY": "az-env", "AZURE_OPENAI_ENDPOINT": api.URL, "AZURE_OPENAI_API_VERSION": "2025-01-01-preview", "OPENAI_API_VERSION": "2024-06-01"}, func(t *testing.T, s seen) {
			if s.query != "api-version=2025-01-01-preview" {
				t.Errorf("query %q, want AZURE_OPENAI_API_VERSION to win", s.query)
			}
		}},
		{"ollama:qwen2.5:7b", env{"OLLAMA_HOST": hostPort}, func(t *testing.T, s seen) {
			if s.path != "/v1/chat/completions" || s.auth != "" || s.body["model"] != "qwen2.5:7b" {
				t.Errorf("seen %+v", s)
			}
		}},
		{"anthropic:claude-sonnet-4-5", env{"ANTHROPIC_API_KEY": "ant-env", "ANTHROPIC_BASE_URL": api.URL}, func(t *testing.T, s seen) {
			if s.path != "/v1/messages" || s.xAPIKey != "ant-env" || s.body["model"] != "claude-sonnet-4-5" {
				t.Errorf("seen %+v", s)
			}
		}},
		{"vllm:Qwen/Qwen2.5-7B-Instruct", env{"VLLM_BASE_URL": api.URL + "/v1"}, func(t *testing.T, s seen) {
			if s.path != "/v1/chat/completions" || s.auth != "" || s.body["model"] != "Qwen/Qwen2.5-7B-Instruct" {
				t.Errorf("seen %+v", s)
			}
		}},
		{"lmstudio:qwen2.5-7b-instruct", env{"LMSTUDIO_BASE_URL": api.URL + "/v1", "LMSTUDIO_API_KEY": "lm-key"}, func(t *testing.T, s seen) {
			if s.path != "/v1/chat/completions" || s.auth != "Bearer lm-key" {
				t.Errorf("seen %+v", s)
			}
		}},
		{"openai-compatible:local", env{"OPENAI_COMPATIBLE_BASE_URL": api.URL + "/v1"}, func(t *testing.T, s seen) {
			if s.path != "/v1/chat/completions" || s.body["model"] != "local" {
				t.Errorf("seen %+v", s)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			m, err := provider.Open(tt.spec, nil, tt.env.get)
			if err != nil {
				t.Fatal(err)
			}
			ask(t, m)
			tt.check(t, api.last(t))
		})
	}
}

func TestOpenTypes(t *testing.T) {
	e := env{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
	if m, err := provider.Open("openai:gpt-4o", nil, e.get); err != nil {
		t.Error(err)
	} else if _, ok := m.(*openai.Model); !ok {
		t.Errorf("openai gave %T", m)
	}
	if m, err := provider.Open("anthropic:claude-sonnet-4-5", nil, e.get); err != nil {
		t.Error(err)
	} else if _, ok := m.(*langchain.Model); !ok {
		t.Errorf("anthropic gave %T", m)
	}
	// Ollama needs neither key nor host: the default is the local server.
	if _, err := provider.Open("ollama:qwen2.5", nil, env{}.get); err != nil {
		t.Errorf("ollama with an empty environment: %v", err)
	}
}

func TestSettingsWinOverEnvironment(t *testing.T) {
	api := newFakeAPI(t)
	e := env{"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "ANTHROPIC_API_KEY": "ant-env", "ANTHROPIC_BASE_URL": "http://127.0.0.1:1"}
	settings := map[string]provider.Settings{
		"openai":    {APIKey: "sk-settings", BaseURL: api.URL + "/v1", Organization: "org-settings", Headers: map[string]string{"X-Team": "qa"}},
		"anthropic": {APIKey: "ant-settings", BaseURL: api.URL + "/v1", Headers: map[string]string{"X-Team": "qa"}},
		"azure":     {APIKey: "az-settings", BaseURL: api.URL, APIVersion: "2024-02-01"},
	}
	e["AZURE_OPENAI_API_KEY"], e["AZURE_OPENAI_ENDPOINT"], e["OPENAI_API_VERSION"] = "az-env", "http://127.0.0.1:1", "2023-05-15"

	m, err := provider.Open("openai:gpt-4o", settings, e.get)
	if err != nil {
		t.Fatal(err)
	}
	ask(t, m)
	if s := api.last(t); s.auth != "Bearer sk-settings" || s.org != "org-settings" || s.custom != "qa" {
		t.Errorf("openai: seen %+v", s)
	}

	m, err = provider.Open("anthropic:claude-sonnet-4-5", settings, e.get)
	if err != nil {
		t.Fatal(err)
	}
	ask(t, m)
	if s := api.last(t); s.xAPIKey != "ant-settings" || s.custom != "qa" || s.path != "/v1/messages" {
		t.Errorf("anthropic: seen %+v", s)
	}

	m, err = provider.Open("azure:dep", settings, e.get)
	if err != nil {
		t.Fatal(err)
	}
	ask(t, m)
	if s := api.last(t); s.apiKey != "az-settings" || s.query != "api-version=2024-02-01" {
		t.Errorf("azure: seen %+v", s)
	}
}

func TestMissingConfiguration(t *testing.T) {
	tests := []struct {
		spec     string
		env      env
		mentions []string
	}{
		{"openai:gpt-4o", env{}, []string{"openai: no API key", "OPENAI_API_KEY", "providers.openai.api_key"}},
		{"azure:dep", env{"AZURE_OPENAI_ENDPOINT": "https://x.openai.azure.com"}, []string{"AZURE_OPENAI_API_KEY", "providers.azure.api_key"}},
		{"azure:dep", env{"AZURE_OPENAI_API_KEY": "k"}, []string{"no endpoint", "AZURE_OPENAI_ENDPOINT", "providers.azure.base_url"}},
		{"anthropic:claude-sonnet-4-5", env{"OPENAI_API_KEY": "k"}, []string{"ANTHROPIC_API_KEY", "providers.anthropic.api_key"}},
		{"vllm:m", env{}, []string{"no base URL", "VLLM_BASE_URL", "providers.vllm.base_url", "localhost:8000"}},
		{"lmstudio:m", env{}, []string{"LMSTUDIO_BASE_URL", "providers.lmstudio.base_url"}},
		{"openai-compatible:m", env{}, []string{"OPENAI_COMPATIBLE_BASE_URL", "providers.openai-compatible.base_url"}},
		{"ollama:m", env{"OLLAMA_HOST": "http://[::1"}, []string{"OLLAMA_HOST", "providers.ollama.base_url"}},
	}
	for _, tt := range tests {
		m, err := provider.Open(tt.spec, nil, tt.env.get)
		if err == nil {
			t.Errorf("%s: opened %T, want an error", tt.spec, m)
			continue
		}
		if m != nil {
			t.Errorf("%s: got a non-nil model (%T) with the error", tt.spec, m)
		}
		for _, want := range tt.mentions {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not mention %q", tt.spec, err, want)
			}
		}
	}
}

func TestOpenScripted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(path, []byte("replies:\n  - text: pong\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := provider.Open("scripted:"+path, nil, env{}.get)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(*scripted.Model); !ok {
		t.Errorf("scripted gave %T", m)
	}
	ask(t, m)

	m, err = provider.Open("scripted:"+filepath.Join(t.TempDir(), "missing.yaml"), nil, env{}.get)
	if err == nil || m != nil {
		t.Errorf("missing script: got %v, %v; want a nil model and an error", m, err)
	}
}

func TestSettingsYAMLAndJSONNames(t *testing.T) {
	s := provider.Settings{APIKey: "k", BaseURL: "u", APIVersion: "v", Organization: "o", Headers: map[string]string{"H": "x"}}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"api_key":"k","base_url":"u","api_version":"v","organization":"o","headers":{"H":"x"}}` {
		t.Errorf("JSON = %s", data)
	}

	var fromYAML map[string]provider.Settings
	doc := "openai:\n  api_key: k\n  base_url: u\n  api_version: v\n  organization: o\n  headers: {H: x}\n"
	if err := yaml.Unmarshal([]byte(doc), &fromYAML); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromYAML["openai"], s) {
		t.Errorf("YAML gave %+v, want %+v", fromYAML["openai"], s)
	}
}

// The README names OPENAI_BASE_URL for OpenAI-compatible servers; the
// provider reads it (after its own variable).
func TestCompatibleReadsOpenAIBaseURL(t *testing.T) {
	env := func(k string) string {
		return map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}[k]
	}
	if _, err := provider.Open("openai-compatible:qwen", nil, env); err != nil {
		t.Errorf("with OPENAI_BASE_URL: %v", err)
	}
	_, err := provider.Open("openai-compatible:qwen", nil, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "set OPENAI_BASE_URL") {
		t.Errorf("with nothing: %v", err)
	}
}
