package local

import (
	"context"
	"path/filepath"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/tools/desktop"
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
	dc := cfg.Tools.Desktop
	opts := desktop.Options{Display: dc.Display, Bus: dc.Bus, Dir: workdir}
	var out []desktop.Finding
	for _, name := range names {
		if !cfg.MCP.IsDesktop(name) {
			continue
		}
		if out == nil {
			out = desktop.Check(ctx, opts)
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
