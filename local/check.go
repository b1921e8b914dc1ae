package local

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/tools/desktop"
	"github.com/saucerhq/saucer/tools/desktop/display"
)

// DesktopChecks checks what the selected desktop servers (app's set, or
// mcp.use) need, for saucer doctor: the display, the session bus and the
// AT-SPI bus once, then each desktop application's command, its Finding
// named "app NAME". It returns nothing when no desktop server is
// selected.
func DesktopChecks(ctx context.Context, cfg *config.Config, workdir, app string) ([]desktop.Finding, error) {
	names, err := cfg.MCP.Selected(app)
	if err != nil {
		return nil, err
	}
	if workdir, err = filepath.Abs(workdir); err != nil {
		return nil, err
	}
	opts := desktopOptions(cfg, workdir, nil)
	var out []desktop.Finding
	for _, name := range names {
		if !cfg.MCP.IsDesktop(name) {
			continue
		}
		if out == nil {
			out = displayChecks(ctx, cfg, opts)
		}
		def, named := cfg.MCP.Servers[name]
		if !named || def.Kind != "desktop" || def.Command == "" {
			continue // the desktop as a whole, or an app launched by name later
		}
		f := desktop.CheckApp(append([]string{def.Command}, def.Args...), workdir)
		f.What = "app " + name
		out = append(out, f)
	}
	return out, nil
}

// displayChecks checks the display and buses the desktop servers will
// use: the person's (desktop.Check), or, with a desktop of its own
// (tools.desktop.display: own, xvfb, sway, weston), that this machine
// can start one; its buses are its own, started with it.
func displayChecks(ctx context.Context, cfg *config.Config, opts desktop.Options) []desktop.Finding {
	name, own := cfg.Tools.Desktop.Own()
	if !own {
		return desktop.Check(ctx, opts)
	}
	kind, err := display.ParseKind(name)
	if err != nil {
		return []desktop.Finding{{What: "display", Detail: "tools.desktop.display: " + err.Error(), Fix: "set tools.desktop.display to own, xvfb, sway or weston, or to the X display to use"}}
	}
	if miss := display.Missing(kind); miss != "" {
		return []desktop.Finding{{What: "display", Detail: fmt.Sprintf("a desktop of its own (%s) cannot start: missing %s", kind, miss), Fix: "install the packages named"}}
	}
	return []desktop.Finding{{What: "display", OK: true, Detail: fmt.Sprintf("a desktop of its own (%s), with its own session and AT-SPI buses, started for each session", kind)}}
}
