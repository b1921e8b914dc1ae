package config

import (
	"os"
	"strings"

	"github.com/saucerhq/saucer/memory"
)

// Record configures how sessions are recorded (see package trajectory).
type Record struct {
	// Enabled records every `saucer run`; --no-record turns it off once.
	Enabled bool `yaml:"enabled"`
	// Dir holds one directory per recorded run, named by the run's id.
	Dir string `yaml:"dir"`
	// ArtifactThreshold is the size in bytes from which a value moves into
	// an artifact file (0: the default, 4096; negative: never).
	ArtifactThreshold int `yaml:"artifact_threshold"`
	// Redact lists more secrets to remove from recordings: literal values,
	// or $NAME for the value of the environment variable NAME.
	Redact []string `yaml:"redact"`
	// RedactPatterns are more regular expressions whose matches are
	// removed, on top of the built-in API-key shapes.
	RedactPatterns []string `yaml:"redact_patterns"`
	// Keep prunes old runs from Dir when a run starts, and when a server
	// starts and every hour while it serves.
	Keep Keep `yaml:"keep"`
}

// Keep says which recorded runs stay (zero: all). A run that may be
// running (no session_end, written to within a day) and the one starting
// are never removed.
type Keep struct {
	// Age removes runs last written longer ago (720h: 30 days).
	Age Duration `yaml:"age"`
	// Size removes the oldest runs until those left take at most this
	// much ("5GiB").
	Size Size `yaml:"size"`
}

// secretEnv are the environment variables that hold provider credentials.
var secretEnv = []string{"OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "ANTHROPIC_API_KEY"}

// Secrets lists the values a recording must never contain: the providers'
// API keys and header values, the provider keys in the environment, every
// environment variable whose name says it holds a secret (*_API_KEY,
// *_TOKEN, *_SECRET, *_PASSWORD) and what record.redact names. getenv nil
// means os.Getenv; environ nil means os.Environ.
func (c *Config) Secrets(getenv func(string) string, environ func() []string) []string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if environ == nil {
		environ = os.Environ
	}
	var out []string
	for _, p := range c.Providers {
		out = append(out, p.APIKey, URLPassword(p.BaseURL))
		out = append(out, secretsOfMap(p.Headers, true)...)
	}
	out = append(out, secretsOfMap(c.Telemetry.Headers, true)...)
	for _, s := range c.MCP.Servers {
		out = append(out, URLPassword(s.URL))
		out = append(out, secretsOfMap(s.Headers, true)...)
		out = append(out, secretsOfMap(s.Env, false)...)
	}
	for _, name := range secretEnv {
		out = append(out, getenv(name))
	}
	env := map[string]string{}
	for _, kv := range environ() {
		name, val, _ := strings.Cut(kv, "=")
		env[name] = val
	}
	out = append(out, secretsOfMap(env, false)...)
	for _, r := range c.Record.Redact {
		if name, ok := strings.CutPrefix(r, "$"); ok {
			out = append(out, getenv(name))
			continue
		}
		out = append(out, r)
	}
	var kept []string
	for _, s := range out {
		// Too short to be a credential, and redacting it would shred the
		// recording (see trajectory.MinSecretLength).
		if len(strings.TrimSpace(s)) >= 6 {
			kept = append(kept, s)
		}
	}
	return kept
}

// FromYAML reads a config written by YAML (a recorded session's config)
// over the built-in defaults.
//
// The context policy is read over none: a recording made before the
// presets names recent, condensed and block and no preset, and replays
// with the window policy it ran with (see memory.Policy.WithDefaults).
func FromYAML(data []byte) (*Config, error) {
	base := Default()
	base.Agent.Context = memory.Policy{}
	return parse(base, data, "recorded config")
}
