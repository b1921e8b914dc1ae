package local

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/display"
	"github.com/saucerhq/saucer/sandbox"
	"github.com/saucerhq/saucer/tools/desktop"
)

// DesktopChecks checks what the selected desktop servers (app's set, or
// mcp.use) need, for saucer doctor: the display, the session bus and the
// AT-SPI bus once, then each desktop application's command, its Finding
// named "app NAME". It returns nothing when no desktop server is
// selected. With sb, the sandboxed device the session will use, a desktop
// of its own on Xvfb is checked inside it, where it will run.
func DesktopChecks(ctx context.Context, cfg *config.Config, workdir, app string, sb *sandbox.Sandbox) ([]desktop.Finding, error) {
	names, err := cfg.MCP.Selected(app)
	if err != nil {
		return nil, err
	}
	if workdir, err = filepath.Abs(workdir); err != nil {
		return nil, err
	}
	opts := desktopOptions(cfg, workdir, nil)
	var jail display.Jail
	if name, own := cfg.Tools.Desktop.Own(); own && sb != nil {
		if kind, err := display.ParseKind(name); err == nil && kind == display.Xvfb {
			jail = sandboxJail{sb} // as startOwnDisplay does
		}
	}
	var out []desktop.Finding
	for _, name := range names {
		if !cfg.MCP.IsDesktop(name) {
			continue
		}
		if out == nil {
			out = displayChecks(ctx, cfg, opts, jail)
		}
		def, named := cfg.MCP.Servers[name]
		if !named || def.Kind != "desktop" || def.Command == "" {
			continue // the desktop as a whole, or an app launched by name later
		}
		var f desktop.Finding
		if jail != nil {
			f = appInside(jail, append([]string{def.Command}, def.Args...))
		} else {
			f = desktop.CheckApp(append([]string{def.Command}, def.Args...), workdir)
		}
		f.What = "app " + name
		out = append(out, f)
	}
	return out, nil
}

// appInside checks that a desktop app's program is in the sandbox's root,
// where launch_app starts it.
func appInside(j display.Jail, app []string) desktop.Finding {
	if p := display.LookPathIn(j, app[0]); p != "" {
		return desktop.Finding{OK: true, Detail: strings.Join(app, " ") + " (" + p + " inside the sandbox)"}
	}
	return desktop.Finding{Detail: app[0] + ": not found inside the sandbox (its root filesystem has no such program)",
		Fix: "install the application in the sandbox's root filesystem, or give it the host's (sandbox.root: /)"}
}

// displayChecks checks the display and buses the desktop servers will
// use: the person's (desktop.Check), or, with a desktop of its own
// (tools.desktop.display: own, xvfb, sway, weston), that this machine
// can start one; its buses are its own, started with it.
func displayChecks(ctx context.Context, cfg *config.Config, opts desktop.Options, jail display.Jail) []desktop.Finding {
	name, own := cfg.Tools.Desktop.Own()
	if !own {
		return desktop.Check(ctx, opts)
	}
	kind, err := display.ParseKind(name)
	if err != nil {
		return []desktop.Finding{{What: "display", Detail: "tools.desktop.display: " + err.Error(), Fix: "set tools.desktop.display to own, xvfb, sway or weston, or to the X display to use"}}
	}
	if jail != nil && kind == display.Xvfb {
		if miss := display.MissingIn(jail, kind); miss != "" {
			return []desktop.Finding{{What: "display", Detail: fmt.Sprintf("a desktop of its own (%s) cannot start inside the sandbox: its root filesystem lacks %s", kind, miss),
				Fix: "install the packages named in the sandbox's root filesystem, or give it the host's (sandbox.root: /)"}}
		}
		return []desktop.Finding{{What: "display", OK: true, Detail: fmt.Sprintf("a desktop of its own (%s) inside the sandbox, with its own session and AT-SPI buses, started for each session", kind)}}
	}
	if miss := display.Missing(kind); miss != "" {
		return []desktop.Finding{{What: "display", Detail: fmt.Sprintf("a desktop of its own (%s) cannot start: missing %s", kind, miss), Fix: "install the packages named"}}
	}
	return []desktop.Finding{{What: "display", OK: true, Detail: fmt.Sprintf("a desktop of its own (%s), with its own session and AT-SPI buses, started for each session", kind)}}
}
