// Package config is Saucer's configuration: one YAML file over embedded
// defaults that need no file for local mode, then environment overrides.
package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/invopop/jsonschema"
	"go.yaml.in/yaml/v4"

	"github.com/saucerhq/saucer/internal/yamlkeys"
	"github.com/saucerhq/saucer/llm/price"
	"github.com/saucerhq/saucer/llm/provider"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/strategy"
)

//go:embed default.yaml
var defaultYAML []byte

// Config is the whole configuration.
type Config struct {
	Model     string                       `yaml:"model"`
	Mode      string                       `yaml:"mode"`
	Models    map[string]Model             `yaml:"models"`
	Providers map[string]provider.Settings `yaml:"providers"`
	Agent     Agent                        `yaml:"agent"`
	Budget    Budget                       `yaml:"budget"`
	// Telemetry exports traces over OTLP when an endpoint is set; off by
	// default.
	Telemetry Telemetry `yaml:"telemetry"`
	// Prices extend the built-in price table (USD per million tokens), by
	// model spec or pattern, for the cost that run shows and budgets.
	Prices  map[string]Price `yaml:"prices"`
	Prompts string           `yaml:"prompts"`
	Tools   Tools            `yaml:"tools"`
	// Device is where tools run: local (this machine) or sandbox.
	Device  string  `yaml:"device"`
	Sandbox Sandbox `yaml:"sandbox"`
	// Sections of later features follow, one field each.
	MCP    MCP    `yaml:"mcp"`
	Record Record `yaml:"record"`
	Remote Remote `yaml:"remote"`
	// Constellation configures the constellations a server runs (one
	// request over several devices).
	Constellation Constellation `yaml:"constellation"`
	// Knowledge configures the store agents learn from (saucer learn).
	Knowledge Knowledge `yaml:"knowledge"`
}

// Constellation configures constellations: which devices they may use
// and how many of their nodes run at once.
type Constellation struct {
	// Devices names the devices a constellation may put nodes on (client
	// ids); empty means every connected device.
	Devices []string `yaml:"devices"`
	// MaxConcurrent bounds the nodes running at once over all
	// constellations; PerDevice bounds them on one device.
	MaxConcurrent int `yaml:"max_concurrent"`
	PerDevice     int `yaml:"per_device"`
	// MaxPlannerSteps bounds the constellation agent's steps for one
	// constellation.
	MaxPlannerSteps int `yaml:"max_planner_steps"`
	// MaxNodes bounds a graph's nodes and MaxEdits the edits of one
	// planner reply: a plan past them is refused whole, with the reason.
	MaxNodes int `yaml:"max_nodes"`
	MaxEdits int `yaml:"max_edits"`
	// DeviceWait is how long a node waits for its device to connect (a
	// device reconnecting after a restart, say) when no other device of
	// the same kind can take it; then it fails, with the reason.
	DeviceWait Duration `yaml:"device_wait"`
	// ReviewBeforeStart makes the nodes a batch of ends unblocks wait for
	// the planner's step on that batch (slower; lets it edit them first).
	ReviewBeforeStart bool `yaml:"review_before_start"`
	// Servers are AIP servers outside this cluster (another `saucer
	// serve`, or UFO's) whose devices nodes may run on, reached as a
	// constellation client.
	Servers []ConstellationServer `yaml:"servers"`
}

// ConstellationServer is an AIP server a constellation reaches as a
// constellation client.
type ConstellationServer struct {
	// URL is its WebSocket URL, ws://HOST:PORT/ws or wss://.
	URL string `yaml:"url"`
	// Token is its API key; TokenEnv names an environment variable that
	// holds it instead (better than the key in the file).
	Token    string `yaml:"token,omitempty"`
	TokenEnv string `yaml:"token_env,omitempty"`
	// Name is the client's name there (it registers as NAME@DEVICE).
	Name string `yaml:"name,omitempty"`
	// Devices are its devices nodes may use, with their apps: AIP cannot
	// list a server's devices.
	Devices []ConstellationDevice `yaml:"devices"`
}

// ConstellationDevice is a device of another server, with its apps.
type ConstellationDevice struct {
	ID   string   `yaml:"id"`
	Apps []string `yaml:"apps"`
	// Platform, Sandbox (the root image its tools run in; empty: the
	// host) and Labels are its profile, which nodes' requirements are
	// matched against: AIP does not tell them either.
	Platform string   `yaml:"platform,omitempty"`
	Sandbox  string   `yaml:"sandbox,omitempty"`
	Labels   []string `yaml:"labels,omitempty"`
}

// ProviderSettings are one provider's key, endpoint and headers.
type ProviderSettings = provider.Settings

// Model holds settings for models whose spec matches the key (a path.Match
// pattern such as "ollama:*").
type Model struct {
	Mode string `yaml:"mode"`
	// Fallbacks are the models asked, in order, when this one is
	// unavailable after retries or its context is too small.
	Fallbacks []string `yaml:"fallbacks"`
	// ContextTokens is the model's context window; a request's history is
	// kept to about three quarters of it (agent.context.max_bytes wins).
	ContextTokens int `yaml:"context_tokens"`
}

// Agent bounds and shapes the agents.
type Agent struct {
	MaxRounds      int      `yaml:"max_rounds"`
	MaxSteps       int      `yaml:"max_steps"`
	MaxRetries     int      `yaml:"max_retries"`
	RetryBackoff   Duration `yaml:"retry_backoff"`
	CommandTimeout Duration `yaml:"command_timeout"`
	// DetachAfter leaves an app agent's command that runs longer than
	// this running in the background: the model sees its latest output
	// and can check it (command_status) or stop it (cancel_command). Zero
	// waits for every command.
	DetachAfter    Duration `yaml:"detach_after"`
	MaxResultChars int      `yaml:"max_result_chars"`
	// ComputerUse is auto (a desktop app's agent offers its model's
	// native computer-use tool where the model has one and the app has
	// the pixel tools) or off (the desktop's tools alone).
	ComputerUse string `yaml:"computer_use"`
	// DirectApp, when set, runs every task straight as that app's agent,
	// with no host agent: for devices where one app does all the work
	// (AgentBench's shell). The app's result is the answer.
	DirectApp string `yaml:"direct_app"`
	// ArtifactHead is how much of a value over max_result_chars a request
	// shows; the model reads the rest with read_artifact.
	ArtifactHead       int  `yaml:"artifact_head"`
	ConfirmDestructive bool `yaml:"confirm_destructive"`
	// MaxRetryAfter caps how long a server may ask a retry to wait.
	MaxRetryAfter Duration `yaml:"max_retry_after"`
	// Approve lists rules for commands that go to the user before they run.
	Approve []strategy.ApprovalRule `yaml:"approve"`
	// Context bounds how much of an agent's history each request carries.
	Context        memory.Policy   `yaml:"context"`
	HostStrategies []strategy.Spec `yaml:"host_strategies"`
	AppStrategies  []strategy.Spec `yaml:"app_strategies"`
	// HostEdits and AppEdits change those pipelines (or the defaults)
	// without restating them: a strategy before or after a named one, a
	// replaced or removed one.
	HostEdits []strategy.Edit `yaml:"host_edits"`
	AppEdits  []strategy.Edit `yaml:"app_edits"`
	// AppPipelines give named apps (tool namespaces) a pipeline of their
	// own: whole, or as edits of the app pipeline above.
	AppPipelines map[string]AppPipeline `yaml:"app_pipelines"`
}

// Budget bounds what one run (or one serve task) may spend; zero fields
// are unbounded. Tokens count every reply's prompt and completion, used or
// not (Saucer counts them itself when a server reports none); cost needs
// a price for the model and its fallbacks, or the run is refused before
// it starts.
type Budget struct {
	ModelCalls int      `yaml:"model_calls"`
	Tokens     int      `yaml:"tokens"`
	CostUSD    float64  `yaml:"cost_usd"`
	Wall       Duration `yaml:"wall"`
}

// Telemetry says where OpenTelemetry traces go (OTLP over HTTP).
type Telemetry struct {
	OTLPEndpoint string            `yaml:"otlp_endpoint"`
	Headers      map[string]string `yaml:"headers"`
}

// Price is what a model costs, in USD per million tokens; Cached, when
// set, prices prompt tokens served from the provider's cache.
type Price = price.Price

// PriceTable is the built-in price table with the config's prices over it,
// for reading only (see price.BuiltinWith).
func (c *Config) PriceTable() price.Table { return price.BuiltinWith(c.Prices) }

// AppPipeline is one app's own pipeline.
type AppPipeline struct {
	Strategies []strategy.Spec `yaml:"strategies"`
	Edits      []strategy.Edit `yaml:"edits"`
}

// Pipelines resolves the agent section's pipelines: the host's, the apps'
// default, and each named app's, every edit applied.
func (a Agent) Pipelines() (host, app []strategy.Spec, apps map[string][]strategy.Spec, err error) {
	if host, err = strategy.EditPipeline(a.HostStrategies, a.HostEdits); err != nil {
		return nil, nil, nil, fmt.Errorf("agent.host_edits: %w", err)
	}
	if app, err = strategy.EditPipeline(a.AppStrategies, a.AppEdits); err != nil {
		return nil, nil, nil, fmt.Errorf("agent.app_edits: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(a.AppPipelines)) {
		p := a.AppPipelines[name]
		base := p.Strategies
		if len(base) == 0 {
			base = app
		}
		own, err := strategy.EditPipeline(base, p.Edits)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("agent.app_pipelines.%s: %w", name, err)
		}
		if apps == nil {
			apps = map[string][]strategy.Spec{}
		}
		apps[name] = own
	}
	return host, app, apps, nil
}

// Tools configures Saucer's own MCP servers.
type Tools struct {
	Shell   Shell   `yaml:"shell"`
	Files   Files   `yaml:"files"`
	Desktop Desktop `yaml:"desktop"`
}

// Desktop configures the desktop tool (applications on X11 or Wayland,
// through AT-SPI).
type Desktop struct {
	Enabled     bool   `yaml:"enabled"`
	Description string `yaml:"description"`
	// Display is the person's X display (default $DISPLAY), or one of
	// OwnDisplays: a desktop of its own that Saucer starts for the
	// session. Bus defaults to $DBUS_SESSION_BUS_ADDRESS.
	Display string `yaml:"display"`
	Bus     string `yaml:"bus"`
	// Wayland is the person's Wayland display, a socket name or path
	// (default $WAYLAND_DISPLAY, used when no X display is named or set);
	// SwaySocket sway's IPC socket (default $SWAYSOCK).
	Wayland    string `yaml:"wayland"`
	SwaySocket string `yaml:"sway_socket"`
	// Fetch is how a window's controls are read: cache or walk.
	Fetch         string   `yaml:"fetch"`
	LaunchTimeout Duration `yaml:"launch_timeout"`
}

// OwnDisplays are the values of tools.desktop.display that give a session
// a desktop of its own ("own" is Xvfb).
var OwnDisplays = []string{"own", "xvfb", "sway", "weston"}

// Own names the display server of a desktop of its own, if the config
// asks for one.
func (d Desktop) Own() (string, bool) {
	if slices.Contains(OwnDisplays, d.Display) {
		return d.Display, true
	}
	return "", false
}

func (d Desktop) validate() error {
	if _, own := d.Own(); own || d.Display == "" || strings.Contains(d.Display, ":") {
		return nil
	}
	return fmt.Errorf("tools.desktop.display: %q is neither an X display (:1, host:0.0) nor a desktop of its own (%s)", d.Display, strings.Join(OwnDisplays, ", "))
}

// Shell configures the shell tool.
type Shell struct {
	Enabled     bool     `yaml:"enabled"`
	Description string   `yaml:"description"`
	Timeout     Duration `yaml:"timeout"`
	// MaxTimeout is the longest timeout a command may ask for.
	MaxTimeout Duration `yaml:"max_timeout"`
	MaxOutput  int      `yaml:"max_output"`
	// Persistent runs every command in one long-lived shell, as a
	// terminal does: cd, variables and su carry over between calls.
	Persistent bool `yaml:"persistent"`
}

// Files configures the files tool.
type Files struct {
	Enabled     bool     `yaml:"enabled"`
	Description string   `yaml:"description"`
	Roots       []string `yaml:"roots"`
}

// Duration is a time.Duration written as "30s" or "5m" in YAML.
type Duration time.Duration

// UnmarshalYAML reads a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (write e.g. 30s, 5m)", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// MarshalJSON writes the duration as a string ("90s").
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Duration(d).String() + `"`), nil
}

// JSONSchema describes a duration as the string it is written as.
func (Duration) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Pattern: `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`, Description: "A Go duration, e.g. 90s or 5m."}
}

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Default returns the embedded defaults.
func Default() *Config {
	c, err := parse(nil, defaultYAML, "defaults")
	if err != nil {
		panic("config: embedded defaults are broken: " + err.Error())
	}
	return c
}

// Load reads the defaults, then the file at path (if path is not empty),
// then the environment (SAUCER_MODEL, SAUCER_MODE, SAUCER_PROMPTS).
func Load(file string, getenv func(string) string) (*Config, error) {
	c := Default()
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if c, err = parse(c, data, file); err != nil {
			return nil, err
		}
	}
	if getenv != nil {
		if v := getenv("SAUCER_MODEL"); v != "" {
			c.Model = v
		}
		if v := getenv("SAUCER_MODE"); v != "" {
			c.Mode = v
		}
		if v := getenv("SAUCER_PROMPTS"); v != "" {
			c.Prompts = v
		}
	}
	return c, c.Validate()
}

// parse decodes YAML over base (nil: an empty Config), refusing unknown keys.
func parse(base *Config, data []byte, name string) (*Config, error) {
	c := &Config{}
	if base != nil {
		*c = *base
	}
	// Unknown keys are named as the file writes them, with the key meant.
	if unknown, err := yamlkeys.Find(data, c); err == nil && len(unknown) > 0 {
		return nil, fmt.Errorf("config: %s", yamlkeys.Describe(name, unknown))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config %s: %v", name, err)
	}
	return c, nil
}

// Validate checks values that would otherwise fail late.
func (c *Config) Validate() error {
	var errs []string
	if _, _, err := provider.Describe(c.Model); err != nil {
		errs = append(errs, fmt.Sprintf("model: %v", err))
	}
	if _, ok := strategy.ParseMode(c.Mode); !ok {
		errs = append(errs, fmt.Sprintf("mode: %q is not tools or json", c.Mode))
	}
	for pat, m := range c.Models {
		if _, err := path.Match(pat, ""); err != nil {
			errs = append(errs, fmt.Sprintf("models: %q is not a valid pattern", pat))
		}
		if _, ok := strategy.ParseMode(m.Mode); !ok {
			errs = append(errs, fmt.Sprintf("models.%s.mode: %q is not tools or json", pat, m.Mode))
		}
	}
	if _, err := c.Knowledge.UseMode(); err != nil {
		errs = append(errs, err.Error())
	}
	a := c.Agent
	if a.MaxRounds < 1 || a.MaxSteps < 1 {
		errs = append(errs, "agent: max_rounds and max_steps must be at least 1")
	}
	if a.MaxResultChars < 0 || a.ArtifactHead < 0 {
		errs = append(errs, "agent.max_result_chars and agent.artifact_head must not be negative (max_result_chars 0 is no bound)")
	}
	if err := a.Context.Check(); err != nil {
		errs = append(errs, "agent.context: "+err.Error())
	}
	if a.MaxRetries < 0 {
		errs = append(errs, "agent.max_retries must not be negative")
	}
	if a.CommandTimeout.D() <= 0 {
		errs = append(errs, "agent.command_timeout must be positive")
	}
	if a.DetachAfter.D() < 0 {
		errs = append(errs, "agent.detach_after must not be negative (0 waits for every command)")
	}
	if a.ComputerUse != "auto" && a.ComputerUse != "off" && a.ComputerUse != "" {
		errs = append(errs, fmt.Sprintf("agent.computer_use is %q: use auto (offer a model's native computer-use tool on a desktop) or off", a.ComputerUse))
	}
	if _, _, _, err := a.Pipelines(); err != nil {
		errs = append(errs, err.Error())
	}
	errs = append(errs, c.validateDevice()...)
	if err := c.Tools.Desktop.validate(); err != nil {
		errs = append(errs, err.Error())
	}
	for i, r := range a.Approve {
		if err := r.Validate(); err != nil {
			errs = append(errs, fmt.Sprintf("agent.approve[%d]: %v", i, err))
		}
	}
	if err := CheckStore(c.Remote.Store); err != nil {
		errs = append(errs, err.Error())
	}
	if k := c.Constellation; k.MaxConcurrent < 1 || k.PerDevice < 1 || k.MaxPlannerSteps < 1 || k.MaxNodes < 1 || k.MaxEdits < 1 || k.DeviceWait <= 0 {
		errs = append(errs, "constellation: max_concurrent, per_device, max_planner_steps, max_nodes and max_edits must be at least 1, and device_wait more than 0s")
	}
	for i, sv := range c.Constellation.Servers {
		if !strings.HasPrefix(sv.URL, "ws://") && !strings.HasPrefix(sv.URL, "wss://") {
			errs = append(errs, fmt.Sprintf("constellation.servers[%d].url %q: give the server's WebSocket URL, ws://HOST:PORT/ws or wss://", i, redactURL(sv.URL)))
		}
		if len(sv.Devices) == 0 || slices.ContainsFunc(sv.Devices, func(d ConstellationDevice) bool { return d.ID == "" }) {
			errs = append(errs, fmt.Sprintf("constellation.servers[%d]: list its devices, each with an id and its apps (AIP cannot list them)", i))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("config: %s", strings.Join(errs, "; "))
	}
	return nil
}

// ContextFor is the context policy for the given model: agent.context,
// with a history budget from the model's context_tokens when
// agent.context.max_bytes is not set.
func (c *Config) ContextFor(model string) memory.Policy {
	p := c.Agent.Context
	if p.MaxBytes == 0 {
		if m, ok := c.modelEntry(model, func(m Model) bool { return m.ContextTokens > 0 }); ok {
			p.MaxBytes = m.ContextTokens * 3 // three quarters of it, at about 4 bytes a token
		}
	}
	return p
}

// modelEntry is the first models entry for model (exact name first, then
// patterns in sorted order) that has what want looks for.
func (c *Config) modelEntry(model string, want func(Model) bool) (Model, bool) {
	if m, ok := c.Models[model]; ok && want(m) {
		return m, true
	}
	for _, p := range slices.Sorted(maps.Keys(c.Models)) {
		if ok, _ := path.Match(p, model); ok && want(c.Models[p]) {
			return c.Models[p], true
		}
	}
	return Model{}, false
}

// FallbacksFor are the models that stand in for model, in order.
func (c *Config) FallbacksFor(model string) []string {
	m, _ := c.modelEntry(model, func(m Model) bool { return len(m.Fallbacks) > 0 })
	return m.Fallbacks
}

// ModeFor says how the given model acts: the first matching models entry
// (patterns in sorted order, exact names first), else the top-level mode.
func (c *Config) ModeFor(model string) strategy.Mode {
	if m, ok := c.Models[model]; ok && m.Mode != "" {
		mode, _ := strategy.ParseMode(m.Mode)
		return mode
	}
	pats := make([]string, 0, len(c.Models))
	for p := range c.Models {
		pats = append(pats, p)
	}
	sort.Strings(pats)
	for _, p := range pats {
		if ok, _ := path.Match(p, model); ok && c.Models[p].Mode != "" {
			mode, _ := strategy.ParseMode(c.Models[p].Mode)
			return mode
		}
	}
	mode, _ := strategy.ParseMode(c.Mode)
	return mode
}

// YAML renders the config with secrets redacted, for `saucer config`.
func (c *Config) YAML() ([]byte, error) {
	cp := *c
	cp.Providers = map[string]provider.Settings{}
	for k, v := range c.Providers {
		if v.APIKey != "" {
			v.APIKey = "[redacted]"
		}
		v.Headers = redactMap(v.Headers, true)
		v.BaseURL = redactURL(v.BaseURL)
		cp.Providers[k] = v
	}
	// MCP servers' headers (Authorization, ...) and secret environment
	// values are credentials too.
	cp.Telemetry.Headers = redactMap(c.Telemetry.Headers, true)
	cp.Constellation.Servers = slices.Clone(c.Constellation.Servers)
	for i, sv := range cp.Constellation.Servers {
		if sv.Token != "" {
			sv.Token = "[redacted]"
		}
		sv.URL = redactURL(sv.URL) // UFO's servers take ?token=
		cp.Constellation.Servers[i] = sv
	}
	cp.MCP.Servers = make(map[string]MCPServer, len(c.MCP.Servers))
	for k, s := range c.MCP.Servers {
		s.Headers = redactMap(s.Headers, true)
		s.Env = redactMap(s.Env, false)
		s.URL = redactURL(s.URL)
		cp.MCP.Servers[k] = s
	}
	return yaml.Marshal(&cp)
}

// With returns c with the YAML document data laid over it (unknown keys
// refused) and checked; name says where data comes from in errors. c and
// the maps it holds are left as they are.
func (c *Config) With(data []byte, name string) (*Config, error) {
	base, err := c.YAML()
	if err != nil {
		return nil, err
	}
	fresh, err := parse(nil, base, "base")
	if err != nil {
		return nil, err
	}
	out, err := parse(fresh, data, name)
	if err != nil {
		return nil, err
	}
	return out, out.Validate()
}
