package config

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
)

// MCP configures the device's MCP servers: which run (Use), how each is
// reached (Servers), how they are supervised, and the policy over them.
type MCP struct {
	// Use names the servers the device starts, in order. "shell" and
	// "files" are Saucer's own (configured under tools:); other names are
	// keys of Servers.
	Use []string `yaml:"use"`
	// Servers defines servers by name; the name is their namespace. The
	// defaults include presets (filesystem, everything, memory,
	// playwright) that run only when named in Use.
	Servers map[string]MCPServer `yaml:"servers"`
	// Apps maps an app name to the servers it needs, for `--app NAME` to
	// select a set instead of Use.
	Apps map[string][]string `yaml:"apps"`
	// PingInterval is how often external servers are pinged ("0s": never).
	PingInterval Duration `yaml:"ping_interval"`
	// InitTimeout and CallTimeout are the defaults for servers that set
	// none.
	InitTimeout Duration `yaml:"init_timeout"`
	CallTimeout Duration `yaml:"call_timeout"`
	Policy      Policy   `yaml:"policy"`
}

// MCPServer is one server: kind stdio (command, args, env, cwd), http
// (url, headers) or builtin (shell or files).
type MCPServer struct {
	Kind        string            `yaml:"kind"`
	Description string            `yaml:"description"`
	ToolType    string            `yaml:"tool_type"`
	Command     string            `yaml:"command"`
	Args        []string          `yaml:"args"`
	Env         map[string]string `yaml:"env"`
	Cwd         string            `yaml:"cwd"`
	URL         string            `yaml:"url"`
	Headers     map[string]string `yaml:"headers"`
	// Allow and Deny filter tools by name (path.Match patterns).
	Allow []string `yaml:"allow"`
	Deny  []string `yaml:"deny"`
	// Risk sets tools' risk classes by name pattern: read, write,
	// destructive or external.
	Risk         map[string]string   `yaml:"risk"`
	InitTimeout  Duration            `yaml:"init_timeout"`
	CallTimeout  Duration            `yaml:"call_timeout"`
	ToolTimeouts map[string]Duration `yaml:"tool_timeouts"`
	// Sandbox runs a stdio server inside the sandbox when the device is
	// one (device: sandbox); other servers run on the host.
	Sandbox bool `yaml:"sandbox"`
}

// Policy limits what tools may do on the device.
type Policy struct {
	// Forbid lists risk classes whose tools never run.
	Forbid []string    `yaml:"forbid"`
	Shell  ShellPolicy `yaml:"shell"`
}

// ShellPolicy guards Saucer's shell tool.
type ShellPolicy struct {
	// Allow, when not empty, lets only commands whose every call (each
	// simple command, hidden ones included) matches one of these globs
	// run; an interpreter's inline, stdin or module code and file writes
	// need a pattern that names them (see shell.Policy). Deny refuses a
	// command any of whose calls matches one.
	Allow []string `yaml:"allow"`
	Deny  []string `yaml:"deny"`
	// ConfineCwd refuses a cwd outside the working directory.
	ConfineCwd bool `yaml:"confine_cwd"`
	// ScrubEnv removes inherited environment variables whose names match
	// these globs (e.g. *_API_KEY) before a command runs.
	ScrubEnv []string `yaml:"scrub_env"`
	// ScrubURLPasswords removes inherited variables whose value is a URL
	// with a password, whatever their name.
	ScrubURLPasswords bool `yaml:"scrub_url_passwords"`
}

// IsDesktop reports whether the server of that name is a desktop server:
// the built-in "desktop", or a server of kind desktop (a named desktop
// application).
func (m MCP) IsDesktop(name string) bool {
	def, ok := m.Servers[name]
	if !ok || def.Kind == "builtin" {
		return name == "desktop"
	}
	return def.Kind == "desktop"
}

// BuiltinServers are the names of Saucer's own servers.
var BuiltinServers = []string{"shell", "files", "desktop"}

var risks = []string{"read", "write", "destructive", "external"}

var namespaceRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// Selected returns the names to start: the app's set if app is not empty,
// else Use.
func (m MCP) Selected(app string) ([]string, error) {
	if app == "" {
		return m.Use, nil
	}
	set, ok := m.Apps[app]
	if !ok {
		return nil, fmt.Errorf("mcp.apps has no app %q; known apps: %s", app, strings.Join(slices.Sorted(maps.Keys(m.Apps)), ", "))
	}
	return set, nil
}

// Validate checks the section; its errors name the key to fix.
func (m MCP) Validate() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	known := func(name string) bool {
		_, ok := m.Servers[name]
		return ok || slices.Contains(BuiltinServers, name)
	}
	for _, name := range m.Use {
		if !known(name) {
			bad("mcp.use: no server %q; define it under mcp.servers or use one of %s", name, strings.Join(append(BuiltinServers, slices.Sorted(maps.Keys(m.Servers))...), ", "))
		}
	}
	for app, set := range m.Apps {
		for _, name := range set {
			if !known(name) {
				bad("mcp.apps.%s: no server %q", app, name)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.Servers)) {
		s := m.Servers[name]
		at := "mcp.servers." + name
		if !namespaceRE.MatchString(name) {
			bad("%s: the name must start with a letter and hold only letters, digits, _ and -", at)
		}
		switch s.Kind {
		case "stdio":
			if s.Command == "" {
				bad("%s: kind stdio needs a command", at)
			}
		case "http":
			if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
				bad("%s: kind http needs an http:// or https:// url, got %q", at, s.URL)
			}
		case "desktop":
			// command and args, when set, name the application to launch.
		case "builtin":
			if !slices.Contains(BuiltinServers, name) {
				bad("%s: kind builtin is only for %s and %s", at, strings.Join(BuiltinServers[:len(BuiltinServers)-1], ", "), BuiltinServers[len(BuiltinServers)-1])
			}
		default:
			bad("%s: kind %q must be stdio, http, builtin or desktop", at, s.Kind)
		}
		if s.ToolType != "" && s.ToolType != "action" && s.ToolType != "data_collection" {
			bad("%s.tool_type: %q must be action or data_collection", at, s.ToolType)
		}
		for _, p := range append(append(append([]string{}, s.Allow...), s.Deny...), slices.Sorted(maps.Keys(s.Risk))...) {
			if _, err := path.Match(p, ""); err != nil {
				bad("%s: tool pattern %q is malformed", at, p)
			}
		}
		for p, r := range s.Risk {
			if !slices.Contains(risks, r) {
				bad("%s.risk.%s: %q must be one of %s", at, p, r, strings.Join(risks, ", "))
			}
		}
	}
	for _, r := range m.Policy.Forbid {
		if !slices.Contains(risks, r) {
			bad("mcp.policy.forbid: %q must be one of %s", r, strings.Join(risks, ", "))
		}
	}
	if m.PingInterval < 0 || m.InitTimeout < 0 || m.CallTimeout < 0 {
		bad("mcp: ping_interval, init_timeout and call_timeout must not be negative")
	}
	if len(errs) > 0 {
		return fmt.Errorf("config: %s", strings.Join(errs, "; "))
	}
	return nil
}
