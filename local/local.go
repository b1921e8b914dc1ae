// Package local builds the local device from a config: Saucer's own MCP
// tool servers in-process, the configured stdio and http servers, and a
// device client over them. Package session turns a device into a session
// of agents.
package local

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/display"
	"github.com/saucerhq/saucer/internal/files"
	"github.com/saucerhq/saucer/internal/shell"
	"github.com/saucerhq/saucer/sandbox"
	"github.com/saucerhq/saucer/tools"
	"github.com/saucerhq/saucer/tools/desktop"
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
	// own in-process servers (Go functions made tools with tools.New, in
	// client.Server.MCP) or its own stdio and http servers.
	Extra []client.Server
}

// NewDevice starts the configured MCP servers and o's extra ones, and
// connects a device client to them. With device: sandbox in the config, a
// sandbox is started first, with workdir bound at sandbox.workdir; it ends
// when the client is closed.
func NewDevice(ctx context.Context, cfg *config.Config, workdir string, o DeviceOptions) (*client.Client, error) {
	var sb *sandbox.Sandbox
	if cfg.Device == config.DeviceSandbox {
		var err error
		if sb, err = StartSandbox(ctx, cfg, workdir); err != nil {
			return nil, err
		}
	}
	own, err := ownDisplay(ctx, cfg, o.App, sb)
	if err != nil {
		if sb != nil {
			sb.Close()
		}
		return nil, err
	}
	// What the device started goes with it: the display after the
	// servers (and the applications they launched), then the sandbox.
	release := func() error {
		var err error
		if own != nil {
			err = own.Close()
		}
		if sb != nil {
			err = errors.Join(err, sb.Close())
		}
		return err
	}
	servers, err := servers(cfg, workdir, o.App, sb, own)
	if err != nil {
		release()
		return nil, err
	}
	for _, x := range o.Extra {
		for _, s := range servers {
			if s.Namespace == x.Namespace {
				release()
				return nil, fmt.Errorf("extra MCP server %q: the config already has a server of that name", x.Namespace)
			}
		}
	}
	opts := ClientOptions(cfg)
	if opts.Device, err = deviceInfo(workdir, sb); err != nil {
		release()
		return nil, err
	}
	opts.Device.Labels = slices.Clone(cfg.Remote.Labels)
	if sb != nil || own != nil {
		opts.OnClose = release
	}
	c, err := client.New(ctx, append(servers, o.Extra...), opts)
	if err != nil {
		release()
	}
	return c, err
}

// deviceInfo describes this machine with where the tools run, as they
// see it: they start in workdir, as this process's user; in a sandbox,
// in its working folder, as root, under its host name. The agents are
// told so and need not ask the shell (whoami, pwd).
func deviceInfo(workdir string, sb *sandbox.Sandbox) (command.DeviceInfo, error) {
	d := client.DetectDevice()
	if sb != nil {
		// Commands run as root inside, with the sandbox's environment.
		d.Hostname, d.WorkDir, d.User, d.UID = sb.Hostname(), sb.WorkDir(), "root", "0"
		d.Sandbox = sb.Image()
		d.Home = envValue(sandbox.Env, "HOME")
		return d, nil
	}
	var err error
	d.WorkDir, err = filepath.Abs(workdir)
	return d, err
}

// envValue is the value of key in an environment list ("" when unset).
func envValue(env []string, key string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// StartSandbox starts the sandbox the config describes, with workdir (a
// host folder) as its working directory.
func StartSandbox(ctx context.Context, cfg *config.Config, workdir string) (*sandbox.Sandbox, error) {
	sc := cfg.Sandbox
	work, err := filepath.Abs(workdir)
	if err != nil {
		return nil, err
	}
	sb, err := sandbox.Start(ctx, sandbox.Options{Root: sc.Root, Work: work, WorkDir: sc.WorkDir, Network: sc.Network,
		Hide: sc.Hide, Show: sc.Show, Memory: int64(sc.Memory), Disk: int64(sc.Disk), PIDs: sc.PIDs, CPUs: sc.CPUs})
	if err != nil {
		if errors.Is(err, sandbox.ErrUnsupported) {
			return nil, fmt.Errorf("device: sandbox: %w\n(the plain device, device: local, runs tools on this machine)", err)
		}
		return nil, fmt.Errorf("device: sandbox: %w", err)
	}
	return sb, nil
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
	return servers(cfg, workdir, app, nil, nil)
}

// servers is Servers with the sandbox the tools run in and the desktop
// of its own the desktop servers use, if any.
func servers(cfg *config.Config, workdir, app string, sb *sandbox.Sandbox, own *display.Display) ([]client.Server, error) {
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
		s, ok, err := serverFor(cfg, workdir, name, sb, own)
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
func serverFor(cfg *config.Config, workdir, name string, sb *sandbox.Sandbox, own *display.Display) (client.Server, bool, error) {
	def, defined := cfg.MCP.Servers[name]
	if !defined || def.Kind == "builtin" {
		return builtin(cfg, workdir, name, def, sb, own)
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
	case "desktop":
		// A named desktop application: a desktop server whose default
		// window is that application's, and which launches it when asked
		// to launch nothing in particular.
		app := []string{}
		if def.Command != "" {
			app = append([]string{def.Command}, def.Args...)
		}
		o := desktopOptions(cfg, workdir, own)
		o.App = app
		d := desktop.New(o)
		s.MCP, s.Close = desktop.NewServer(d), d.Close
		if s.Description == "" {
			s.Description = fmt.Sprintf("The desktop application %s: observe its window and act on its controls.", name)
		}
		return s, true, nil
	case "stdio":
		// ${workdir} in args, env and cwd is the working directory, so that
		// a preset can put its state there whatever the server's own idea
		// of a relative path.
		wd := workdir
		if def.Sandbox && sb != nil {
			wd = sb.WorkDir()
		}
		expand := func(v string) string {
			return os.Expand(v, func(k string) string {
				if k == "workdir" {
					return wd
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
		if def.Sandbox && sb != nil {
			// The same command inside, with the sandbox's environment plus
			// the server's own; ${workdir} is the folder inside.
			inside := sb.WorkDir()
			if def.Cwd != "" {
				inside = def.Cwd
				if !filepath.IsAbs(inside) {
					inside = filepath.Join(sb.WorkDir(), inside)
				}
			}
			argv := sb.Argv(inside, append(slices.Clone(sandbox.Env), s.Env...), append([]string{s.Command}, s.Args...)...)
			s.Command, s.Args, s.Env, s.Dir = argv[0], argv[1:], nil, "/"
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

// Builtin builds Saucer's own MCP server "shell", "files" or "desktop" from the
// config (tools: and mcp.policy.shell), for `saucer mcp NAME`. It fails if
// the server is unknown or disabled. stop ends what the server holds (a
// persistent shell and its jobs); call it when done serving.
func Builtin(cfg *config.Config, workdir, name string) (srv *tools.Server, stop func() error, err error) {
	workdir, err = filepath.Abs(workdir)
	if err != nil {
		return nil, nil, err
	}
	var own *display.Display
	if name == "desktop" && cfg.Tools.Desktop.Enabled {
		if own, err = startOwnDisplay(context.Background(), cfg, nil); err != nil {
			return nil, nil, err
		}
	}
	s, ok, err := builtin(cfg, workdir, name, config.MCPServer{}, nil, own)
	if err != nil || !ok {
		if own != nil {
			own.Close()
		}
		if err != nil {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("tools.%s is disabled in the config", name)
	}
	stop = func() error {
		var err error
		if s.Close != nil {
			err = s.Close()
		}
		if own != nil {
			err = errors.Join(err, own.Close())
		}
		return err
	}
	return s.MCP, stop, nil
}

// builtin builds Saucer's own shell or files server from tools: and the
// shell policy.
func builtin(cfg *config.Config, workdir, name string, def config.MCPServer, sb *sandbox.Sandbox, own *display.Display) (client.Server, bool, error) {
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
		o := shell.Options{Dir: workdir, Timeout: sh.Timeout.D(), MaxTimeout: sh.MaxTimeout.D(), MaxOutput: sh.MaxOutput, Persistent: sh.Persistent,
			Policy: shell.Policy{Allow: p.Allow, Deny: p.Deny, ConfineCwd: p.ConfineCwd, ScrubEnv: p.ScrubEnv,
				ScrubURLPasswords: p.ScrubURLPasswords}}
		if sb != nil {
			o.Dir, o.Jail = sb.WorkDir(), sb
			if own != nil && own.Jailed() {
				// The desktop runs in the sandbox too: what the agent
				// starts from the shell shows on it.
				o.Env = own.SessionEnv
			}
		} else if own != nil {
			// What the agent starts from the shell shows on its own
			// desktop too, never on the person's.
			o.Env = own.SessionEnv
		}
		srv, stop, err := shell.Start(o)
		if err != nil {
			return s, false, fmt.Errorf("mcp.policy.shell: %w", err)
		}
		s.Description, s.MCP, s.Close = sh.Description, srv, stop
	case "files":
		fc := cfg.Tools.Files
		if !fc.Enabled {
			return s, false, nil
		}
		roots := slices.Clone(fc.Roots)
		if len(roots) == 0 {
			roots = []string{workdir}
		}
		base := workdir
		var jail files.Jail
		if sb != nil {
			base, jail = sb.WorkDir(), sb
			if len(fc.Roots) == 0 {
				roots = []string{base}
			}
		}
		for i, r := range roots {
			if !filepath.IsAbs(r) {
				roots[i] = filepath.Join(base, r)
			}
		}
		srv, err := files.New(files.Options{Roots: roots, Jail: jail})
		if err != nil {
			return s, false, fmt.Errorf("files tool: %w", err)
		}
		s.Description, s.MCP = fc.Description, srv
	case "desktop":
		dc := cfg.Tools.Desktop
		if !dc.Enabled {
			return s, false, nil
		}
		if dc.Fetch != "" && dc.Fetch != "cache" && dc.Fetch != "walk" {
			return s, false, fmt.Errorf("tools.desktop.fetch: %q is not cache or walk", dc.Fetch)
		}
		d := desktop.New(desktopOptions(cfg, workdir, own))
		s.Description, s.MCP, s.Close = dc.Description, desktop.NewServer(d), d.Close
	default:
		return s, false, fmt.Errorf("mcp: no server %q", name)
	}
	if def.Description != "" {
		s.Description = def.Description
	}
	return s, true, nil
}
