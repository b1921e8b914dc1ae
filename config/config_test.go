package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/strategy"
)

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "saucer.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultsNeedNoFile(t *testing.T) {
	c, err := config.Load("", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "openai:gpt-4o" || c.Agent.MaxSteps != 20 || c.Agent.CommandTimeout.D() != 5*time.Minute ||
		c.Agent.DetachAfter.D() != 30*time.Second || !c.Tools.Shell.Enabled || !c.Tools.Files.Enabled {
		t.Errorf("defaults %+v", c)
	}
}

func TestFileAndEnvironmentOverride(t *testing.T) {
	p := write(t, "model: anthropic:claude-sonnet-4-5\nagent:\n  max_steps: 5\n  command_timeout: 30s\n  app_strategies:\n    - {name: discover}\n    - {name: ask, fail_fast: false}\n")
	env := map[string]string{"SAUCER_MODE": "json"}
	c, err := config.Load(p, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "anthropic:claude-sonnet-4-5" || c.Agent.MaxSteps != 5 || c.Agent.MaxRounds != 10 ||
		c.Agent.CommandTimeout.D() != 30*time.Second || c.Mode != "json" {
		t.Errorf("merged %+v", c)
	}
	if len(c.Agent.AppStrategies) != 2 || *c.Agent.AppStrategies[1].FailFast {
		t.Errorf("strategies %+v", c.Agent.AppStrategies)
	}
	env["SAUCER_MODEL"] = "ollama:llama3"
	c, _ = config.Load(p, func(k string) string { return env[k] })
	if c.Model != "ollama:llama3" {
		t.Errorf("SAUCER_MODEL ignored: %s", c.Model)
	}
}

func TestBadConfigIsAClearError(t *testing.T) {
	cases := map[string]string{
		"model: gpt-4o\n":                         "PROVIDER:MODEL",
		"mode: telepathy\n":                       "telepathy",
		"agent: {max_stepz: 3}\n":                 "max_stepz",
		"agent: {command_timeout: soon}\n":        "not a duration",
		"agent: {max_steps: 0}\n":                 "max_steps",
		"agent: {detach_after: -1s}\n":            "agent.detach_after must not be negative",
		"models: {\"openai:*\": {mode: smoke}}\n": "smoke",
		"model: [1, 2\n":                          "saucer.yaml",
		"agent: {context: {preset: cheap}}\n":     `agent.context: preset "cheap" is not economy, balanced, full or window`,
		"agent: {context: {recent: 4}}\n":         "recent, condensed and block belong to the window preset, not balanced: remove them, or set preset: window",
		"tools: {desktop: {display: mine}}\n":     "neither an X display (:1, host:0.0) nor a desktop of its own (own, xvfb, sway, weston)",
		"constellation: {servers: [{url: \"http://h:5000/ws\", devices: [{id: d1}]}]}\n": "constellation.servers[0].url",
		"constellation: {servers: [{url: \"ws://h:5000/ws\"}]}\n":                        "constellation.servers[0]: list its devices",
	}
	for body, want := range cases {
		_, err := config.Load(write(t, body), nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one mentioning %q", body, err, want)
		}
	}
	if _, err := config.Load(filepath.Join(t.TempDir(), "missing.yaml"), nil); err == nil {
		t.Error("a missing file was accepted")
	}
	for _, good := range []string{":1", "localhost:10.0", "own", "xvfb", "sway", "weston", ""} {
		if _, err := config.Load(write(t, "tools: {desktop: {display: \""+good+"\"}}\n"), nil); err != nil {
			t.Errorf("display %q: %v", good, err)
		}
	}
}

func TestModeFor(t *testing.T) {
	c := config.Default()
	if c.ModeFor("openai:gpt-4o") != strategy.ModeTools || c.ModeFor("ollama:qwen2.5") != strategy.ModeJSON {
		t.Errorf("defaults: %s %s", c.ModeFor("openai:gpt-4o"), c.ModeFor("ollama:qwen2.5"))
	}
	c.Models["ollama:qwen2.5"] = config.Model{Mode: "tools"}
	if c.ModeFor("ollama:qwen2.5") != strategy.ModeTools || c.ModeFor("ollama:llama3") != strategy.ModeJSON {
		t.Error("an exact entry should win over a pattern")
	}
}

func TestYAMLRedactsSecrets(t *testing.T) {
	c := config.Default()
	c.Providers = map[string]config.ProviderSettings{"openai": {APIKey: "sk-secret", Headers: map[string]string{"X-Token": "tok"}}}
	c.Constellation.Servers = []config.ConstellationServer{{URL: "ws://h/ws?token=urlsecret", Token: "aip-secret"}}
	c.MCP.Servers = map[string]config.MCPServer{"far": {URL: "https://u:pw@mcp.example/mcp?region=eu&api_key=mcpsecret#top"}}
	out, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "sk-secret") || strings.Contains(string(out), "tok\n") || strings.Contains(string(out), "aip-secret") ||
		strings.Contains(string(out), "urlsecret") || strings.Contains(string(out), "mcpsecret") || !strings.Contains(string(out), "region=eu") {
		t.Errorf("secrets leaked:\n%s", out)
	}
	if c.Providers["openai"].APIKey != "sk-secret" || c.Providers["openai"].Headers["X-Token"] != "tok" || c.Constellation.Servers[0].Token != "aip-secret" {
		t.Error("redacting changed the config itself")
	}
}

// TestStoreSpec: remote.store takes sqlite:PATH, postgres:// URLs or
// memory; anything else is refused with the forms it takes, and no
// password is repeated.
func TestStoreSpec(t *testing.T) {
	for _, ok := range []string{"", "memory", "sqlite:/tmp/x.db", "postgres://u@h:5432/db", "postgresql://u@h/db"} {
		if err := config.CheckStore(ok); err != nil {
			t.Errorf("CheckStore(%q) = %v", ok, err)
		}
	}
	for spec, want := range map[string]string{"sqlite:": "names no file", "mysql://u:hunter2@h/db": "use sqlite:PATH, postgres://"} {
		err := config.CheckStore(spec)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("CheckStore(%q) = %v, want it to say %q without the password", spec, err, want)
		}
	}
	dir := t.TempDir()
	file := dir + "/c.yaml"
	os.WriteFile(file, []byte("remote:\n  store: redis\n"), 0o644)
	if _, err := config.Load(file, nil); err == nil || !strings.Contains(err.Error(), "remote.store") {
		t.Errorf("Load with remote.store: redis: %v", err)
	}
}

// An unknown key is named as the file writes it, with its line and the
// key it most likely meant, never as a Go type.
func TestUnknownKeyInTheConfigsWords(t *testing.T) {
	p := filepath.Join(t.TempDir(), "saucer.yaml")
	os.WriteFile(p, []byte("model: ollama:qwen2.5\nagent:\n  max_rounds: 4\n  max_stepz: 7\nmodels:\n  \"ollama:*\": {fallbackz: [openai:gpt-4o]}\n"), 0o644)
	_, err := config.Load(p, nil)
	want := `config: unknown key "agent.max_stepz" in ` + p + ` line 4; did you mean "agent.max_steps"?` + "\n" +
		`unknown key "models.'ollama:*'.fallbackz" in ` + p + ` line 6; did you mean "models.'ollama:*'.fallbacks"?`
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n%v\nwant:\n%s", err, want)
	}
	if strings.Contains(err.Error(), "config.Agent") || strings.Contains(err.Error(), "type ") {
		t.Errorf("the error names Go types: %v", err)
	}
	// A recorded config is read the same way.
	if _, err := config.FromYAML([]byte("record: {colour: red}\n")); err == nil || !strings.Contains(err.Error(), `unknown key "record.colour" in recorded config line 1`) {
		t.Errorf("FromYAML: %v", err)
	}
}
