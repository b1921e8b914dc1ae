// Package local builds the local device from a config: Saucer's own MCP
// tool servers in-process, the configured stdio and http servers, and a
// device client over them. Package session turns a device into a session
// of agents.
package local

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/tools/files"
	"github.com/saucerhq/saucer/tools/shell"
)

// Device starts the configured MCP servers (mcp.use) and connects a device
// client to them. workdir is where the shell and stdio servers run and the
// default file root.
func Device(ctx context.Context, cfg *config.Config, workdir string) (*client.Client, error) {
	return DeviceFor(ctx, cfg, workdir, "")
}

// DeviceFor is Device with the server set of one app (mcp.apps), or of
// mcp.use when app is empty.
func DeviceFor(ctx context.Context, cfg *config.Config, workdir, app string) (*client.Client, error) {
	return NewDevice(ctx, cfg, workdir, DeviceOptions{App: app})
}

// DeviceOptions add to what the config says about the device.
type DeviceOptions struct {
	// App picks a server set from mcp.apps; empty means mcp.use.
	App string
	// Extra servers are served beside the configured ones: a program's
	// own in-process MCP servers, for instance Go functions made tools
	// with tools.Add.
	Extra []client.Server
}

// NewDevice starts the configured MCP servers and o's extra ones, and
// connects a device client to them.
func NewDevice(ctx context.Context, cfg *config.Config, workdir string, o DeviceOptions) (*client.Client, error) {
	servers, err := Servers(cfg, workdir, o.App)
	if err != nil {
		return nil, err
	}
	for _, x := range o.Extra {
		for _, s := range servers {
			if s.Namespace == x.Namespace {
				return nil, fmt.Errorf("extra MCP server %q: the config already has a server of that name", x.Namespace)
			}
		}
	}
	return client.New(ctx, append(servers, o.Extra...), ClientOptions(cfg))
}

// ClientOptions are the device client's options from the config.
func ClientOptions(cfg *config.Config) client.Options {
	m := cfg.MCP
	opts := client.Options{CallTimeout: m.CallTimeout.D(), PingInterval: m.PingInterval.D()}
	if m.PingInterval == 0 {
		opts.PingInterval = -1 // "0s" in the config means never
	}
	for _, r := range m.Policy.Forbid {
		opts.Forbid = append(opts.Forbid, client.Risk(r))
	}
	return opts
}

// Servers turns the config's server set into client servers: Saucer's own
// in-process, the others as stdio or http servers.
func Servers(cfg *config.Config, workdir, app string) ([]client.Server, error) {
	workdir, err := filepath.Abs(workdir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(workdir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("working directory %q is not a directory", workdir)
	}
	if err := cfg.MCP.Validate(); err != nil {
		return nil, err
	}
	names, err := cfg.MCP.Selected(app)
	if err != nil {
		return nil, err
	}
	var servers []client.Server
	for _, name := range names {
		s, ok, err := serverFor(cfg, workdir, name)
		if err != nil {
			return nil, err
		}
		if ok {
			servers = append(servers, s)
		}
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("no MCP servers are enabled: name some in mcp.use (and enable tools.shell or tools.files)")
	}
	return servers, nil
}

// serverFor builds one named server; ok is false for a builtin that is
// disabled.
func serverFor(cfg *config.Config, workdir, name string) (client.Server, bool, error) {
	def, defined := cfg.MCP.Servers[name]
	if !defined || def.Kind == "builtin" {
		return builtin(cfg, workdir, name, def)
	}
	s := client.Server{
		Namespace: name, Description: def.Description, ToolType: command.ToolType(def.ToolType),
		Allow: def.Allow, Deny: def.Deny,
		InitTimeout: def.InitTimeout.D(), CallTimeout: def.CallTimeout.D(),
	}
	if s.InitTimeout == 0 {
		s.InitTimeout = cfg.MCP.InitTimeout.D()
	}
	applyCommon(&s, def)
	switch def.Kind {
	case "stdio":
		// ${workdir} in args, env and cwd is the working directory, so that
		// a preset can put its state there whatever the server's own idea
		// of a relative path.
		expand := func(v string) string {
			return os.Expand(v, func(k string) string {
				if k == "workdir" {
					return workdir
				}
				return "${" + k + "}"
			})
		}
		s.Command, s.Dir = def.Command, expand(def.Cwd)
		for _, a := range def.Args {
			s.Args = append(s.Args, expand(a))
		}
		if s.Dir == "" {
			s.Dir = workdir
		} else if !filepath.IsAbs(s.Dir) {
			s.Dir = filepath.Join(workdir, s.Dir)
		}
		for _, k := range slices.Sorted(maps.Keys(def.Env)) {
			s.Env = append(s.Env, k+"="+expand(def.Env[k]))
		}
	case "http":
		s.URL, s.Headers = def.URL, def.Headers
	}
	return s, true, nil
}

func applyCommon(s *client.Server, def config.MCPServer) {
	if len(def.Risk) > 0 {
		s.Risks = map[string]client.Risk{}
		for p, r := range def.Risk {
			s.Risks[p] = client.Risk(r)
		}
	}
	if len(def.ToolTimeouts) > 0 {
		s.ToolTimeouts = map[string]time.Duration{}
		for t, d := range def.ToolTimeouts {
			s.ToolTimeouts[t] = d.D()
		}
	}
}

// Builtin builds Saucer's own MCP server "shell" or "files" from the
// config (tools: and mcp.policy.shell), for `saucer mcp NAME`. It fails if
// the server is unknown or disabled.
func Builtin(cfg *config.Config, workdir, name string) (*server.MCPServer, error) {
	workdir, err := filepath.Abs(workdir)
	if err != nil {
		return nil, err
	}
	s, ok, err := builtin(cfg, workdir, name, config.MCPServer{})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("tools.%s is disabled in the config", name)
	}
	return s.MCP, nil
}

// builtin builds Saucer's own shell or files server from tools: and the
// shell policy.
func builtin(cfg *config.Config, workdir, name string, def config.MCPServer) (client.Server, bool, error) {
	s := client.Server{Namespace: name, ToolType: command.ToolType(def.ToolType), Allow: def.Allow, Deny: def.Deny,
		CallTimeout: def.CallTimeout.D()}
	applyCommon(&s, def)
	switch name {
	case "shell":
		sh := cfg.Tools.Shell
		if !sh.Enabled {
			return s, false, nil
		}
		p := cfg.MCP.Policy.Shell
		srv, err := shell.NewChecked(shell.Options{Dir: workdir, Timeout: sh.Timeout.D(), MaxOutput: sh.MaxOutput,
			Policy: shell.Policy{Allow: p.Allow, Deny: p.Deny, ConfineCwd: p.ConfineCwd, ScrubEnv: p.ScrubEnv}})
		if err != nil {
			return s, false, fmt.Errorf("mcp.policy.shell: %w", err)
		}
		s.Description, s.MCP = sh.Description, srv
	case "files":
		fc := cfg.Tools.Files
		if !fc.Enabled {
			return s, false, nil
		}
		roots := slices.Clone(fc.Roots)
		if len(roots) == 0 {
			roots = []string{workdir}
		}
		for i, r := range roots {
			if !filepath.IsAbs(r) {
				roots[i] = filepath.Join(workdir, r)
			}
		}
		srv, err := files.New(files.Options{Roots: roots})
		if err != nil {
			return s, false, fmt.Errorf("files tool: %w", err)
		}
		s.Description, s.MCP = fc.Description, srv
	default:
		return s, false, fmt.Errorf("mcp: no server %q", name)
	}
	if def.Description != "" {
		s.Description = def.Description
	}
	return s, true, nil
}
