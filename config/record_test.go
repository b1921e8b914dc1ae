package config

import (
	"github.com/saucerhq/saucer/memory"
	"slices"
	"testing"
)

func TestSecrets(t *testing.T) {
	c := Default()
	c.Providers = map[string]ProviderSettings{"openai": {APIKey: "sk-from-config-123", Headers: map[string]string{"X-Org": "org-header-value"}}}
	c.Record.Redact = []string{"literal-secret", "$MY_DB_PASS", "abc"}
	env := map[string]string{"ANTHROPIC_API_KEY": "ant-key-456789", "MY_DB_PASS": "db-password-1", "GITHUB_TOKEN": "ghp_tokenvalue", "HOME": "/root"}
	got := c.Secrets(func(k string) string { return env[k] }, func() []string {
		var out []string
		for k, v := range env {
			out = append(out, k+"="+v)
		}
		return out
	})
	for _, want := range []string{"sk-from-config-123", "org-header-value", "literal-secret", "db-password-1", "ant-key-456789", "ghp_tokenvalue"} {
		if !slices.Contains(got, want) {
			t.Errorf("secrets lack %q: %v", want, got)
		}
	}
	for _, not := range []string{"/root", "abc"} {
		if slices.Contains(got, not) {
			t.Errorf("secrets hold %q", not)
		}
	}
}

func TestRecordDefaultsAndFromYAML(t *testing.T) {
	c := Default()
	if !c.Record.Enabled || c.Record.Dir != "runs" || c.Record.ArtifactThreshold != 4096 {
		t.Errorf("record defaults %+v", c.Record)
	}
	y, _ := c.YAML()
	back, err := FromYAML(y)
	if err != nil || back.Agent.MaxSteps != c.Agent.MaxSteps || back.Record.Dir != "runs" {
		t.Fatalf("%+v %v", back, err)
	}
	if _, err := FromYAML([]byte("record: {colour: red}\n")); err == nil {
		t.Error("unknown key accepted")
	}
}

// A recorded config replays with the context policy it ran with: one
// recorded before presets (recent, condensed and block, no preset) with
// the window, one recorded since with its preset.
func TestRecordedContextPolicy(t *testing.T) {
	old := "agent:\n    context:\n        recent: 8\n        condensed: 24\n        block: 16\n        line_chars: 200\n        max_bytes: 0\n"
	c, err := FromYAML([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Agent.Context.WithDefaults(); p.Preset != memory.Window || p.Recent != 8 {
		t.Errorf("a config recorded before presets replays with %+v, want the window", p)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("a config recorded before presets: %v", err)
	}
	c = Default()
	c.Agent.Context.Preset = memory.Economy
	y, _ := c.YAML()
	back, err := FromYAML(y)
	if err != nil || back.Agent.Context.WithDefaults().Preset != memory.Economy {
		t.Errorf("economy recorded, %+v replayed (%v)", back.Agent.Context, err)
	}
	if p := Default().Agent.Context.WithDefaults(); p.Preset != memory.Balanced {
		t.Errorf("the default policy is %s, want balanced", p.Preset)
	}
}
