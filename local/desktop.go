package local

import (
	"context"
	"fmt"
	"os/exec"
	"slices"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/display"
	"github.com/saucerhq/saucer/sandbox"
	"github.com/saucerhq/saucer/tools/desktop"
)

// ownDisplay starts the desktop of its own that the config asks for
// (tools.desktop.display: own, xvfb, sway or weston) when a desktop server
// is among the device's servers (app's set, or mcp.use), so that the
// agent's applications and input never reach the person's session; nil
// when the config names the person's display, or no desktop is served.
// With a sandbox, an Xvfb display, its buses and its applications run
// inside it.
func ownDisplay(ctx context.Context, cfg *config.Config, app string, sb *sandbox.Sandbox) (*display.Display, error) {
	if _, own := cfg.Tools.Desktop.Own(); !own {
		return nil, nil
	}
	names, err := cfg.MCP.Selected(app)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(names, cfg.MCP.IsDesktop) {
		return nil, nil
	}
	return startOwnDisplay(ctx, cfg, sb)
}

// startOwnDisplay starts the desktop of its own the config names (inside
// sb, when given, if it is Xvfb), or returns nil when it names the
// person's display.
func startOwnDisplay(ctx context.Context, cfg *config.Config, sb *sandbox.Sandbox) (*display.Display, error) {
	name, own := cfg.Tools.Desktop.Own()
	if !own {
		return nil, nil
	}
	kind, err := display.ParseKind(name)
	if err != nil {
		return nil, fmt.Errorf("tools.desktop.display: %w", err)
	}
	o := display.Options{Kind: kind}
	if sb != nil && kind == display.Xvfb {
		o.Jail = sandboxJail{sb}
	}
	d, err := display.Start(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("tools.desktop.display: %s: %w", name, err)
	}
	return d, nil
}

// desktopOptions are a desktop server's options from the config; on own,
// the desktop of its own, when the session has one.
func desktopOptions(cfg *config.Config, workdir string, own *display.Display) desktop.Options {
	dc := cfg.Tools.Desktop
	o := desktop.Options{Display: dc.Display, Bus: dc.Bus, Wayland: dc.Wayland, SwaySock: dc.SwaySocket,
		Fetch: dc.Fetch, LaunchTimeout: dc.LaunchTimeout.D(), Dir: workdir}
	if _, isOwn := dc.Own(); isOwn {
		o.Display, o.Wayland, o.SwaySock, o.Bus = "", "", "", ""
	}
	if own != nil {
		o.Display, o.Wayland, o.SwaySock, o.Bus, o.Env = own.X11, own.Wayland, own.SwaySock, own.Bus, own.Env
	}
	if own != nil && own.Jailed() {
		// Its applications start inside the sandbox, in its working
		// folder, and the AT-SPI bus is reached through the sandbox's root.
		o.Launcher, o.A11yBus, o.Dir = own, own.A11yBus, ""
	}
	return o
}

// sandboxJail runs a desktop of its own inside the sandbox: its
// processes get the sandbox's environment and the display's, never
// Saucer's.
type sandboxJail struct{ sb *sandbox.Sandbox }

func (j sandboxJail) Command(dir string, env []string, argv ...string) *exec.Cmd {
	return j.sb.Command(context.Background(), dir, append(slices.Clone(sandbox.Env), env...), argv...)
}

func (j sandboxJail) Path(inside string) string { return j.sb.Path(inside) }

func (j sandboxJail) HostPID(pid int) int { return j.sb.HostPID(pid) }
