package desktop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/godbus/dbus/v5"
)

// Finding is one thing Check looked at: what, whether it is usable, what
// was found, and what to do when it is not.
type Finding struct {
	What   string // display, session bus, AT-SPI bus, app command
	OK     bool
	Detail string
	Fix    string
}

// Check looks at what the desktop tools need, each part on its own so
// that one missing part does not hide the state of the others: the X
// display (X11 with XTEST for input, or Wayland), the session D-Bus, the AT-SPI bus (its
// registry answering, with the applications registered on it), and, for
// a desktop of one application (Options.App), that application's
// command. It starts nothing and touches no window.
func Check(ctx context.Context, opts Options) []Finding {
	var out []Finding
	if x, err := dialScreen(opts); err != nil {
		out = append(out, Finding{What: "display", Detail: err.Error(),
			Fix: "run inside the desktop session, or set DISPLAY or WAYLAND_DISPLAY (or tools.desktop.display / wayland) to a running X server or Wayland compositor, e.g. Xvfb :99; or give the desktop a display of its own: tools.desktop.display: own"})
	} else {
		out = append(out, Finding{What: "display", OK: true, Detail: describeScreen(x)})
		x.Close()
	}
	out = append(out, checkBuses(ctx, opts.Bus)...)
	if len(opts.App) > 0 {
		out = append(out, CheckApp(opts.App, opts.Dir))
	}
	return out
}

// describeScreen names a display and what input it offers.
func describeScreen(x screen) string {
	switch x := x.(type) {
	case *display:
		return x.name + " (X11, XTEST for input)"
	case *wayland:
		return x.name + " (" + x.kind() + ", " + x.offers() + ")"
	}
	return x.kind()
}

// checkBuses checks the session bus, then the AT-SPI bus it leads to.
func checkBuses(ctx context.Context, sessionAddr string) []Finding {
	if sessionAddr == "" {
		sessionAddr = envSessionBus()
	}
	needsSession := Finding{What: "AT-SPI bus", Detail: "not checked: it is found through the session D-Bus"}
	if sessionAddr == "" {
		return []Finding{{What: "session bus", Detail: "DBUS_SESSION_BUS_ADDRESS is not set",
			Fix: "run inside the desktop session, or set DBUS_SESSION_BUS_ADDRESS (or tools.desktop.bus); dbus-launch or dbus-run-session start one"}, needsSession}
	}
	sess, err := dbus.Connect(sessionAddr, dbus.WithContext(ctx))
	if err != nil {
		return []Finding{{What: "session bus", Detail: fmt.Sprintf("connect to %s: %v", sessionAddr, err),
			Fix: "the address is stale or the bus is down: use the session's DBUS_SESSION_BUS_ADDRESS (or tools.desktop.bus)"}, needsSession}
	}
	sess.Close()
	found := []Finding{{What: "session bus", OK: true, Detail: sessionAddr}}
	a, err := dialA11y(ctx, sessionAddr, "")
	if err != nil {
		return append(found, Finding{What: "AT-SPI bus", Detail: err.Error(),
			Fix: "install at-spi2-core (Debian) and let the session start its bus launcher (/usr/libexec/at-spi-bus-launcher)"})
	}
	defer a.Close()
	apps, err := a.apps(ctx)
	if err != nil {
		return append(found, Finding{What: "AT-SPI bus", Detail: err.Error(),
			Fix: "the AT-SPI registry (at-spi2-registryd) does not answer: restart the session's accessibility bus"})
	}
	names := make([]string, 0, len(apps))
	for _, app := range apps {
		var name string
		switch err := a.get(ctx, ref{app.Bus, rootPath}, ifAccessible, "Name", &name); {
		case errors.Is(err, errNotResponding):
			name = app.Bus + " (not responding)"
		case err != nil || name == "":
			name = app.Bus
		}
		names = append(names, name)
	}
	detail := "the registry answers; no application is registered yet (applications register when they start with accessibility on; launch_app turns it on)"
	if len(names) > 0 {
		slices.Sort(names)
		detail = fmt.Sprintf("the registry answers; %d applications: %s", len(names), strings.Join(names, ", "))
	}
	return append(found, Finding{What: "AT-SPI bus", OK: true, Detail: detail})
}

// CheckApp checks that an application's program (app[0], run from dir)
// can be started, and for LibreOffice that its GTK 3 plugin, its only
// bridge to AT-SPI, is installed.
func CheckApp(app []string, dir string) Finding {
	f := Finding{What: "app command"}
	program := app[0]
	if strings.Contains(program, "/") && !filepath.IsAbs(program) && dir != "" {
		program = filepath.Join(dir, program) // as exec runs it, from Dir
	}
	path, err := exec.LookPath(program)
	if err != nil {
		f.Detail = fmt.Sprintf("%s: %v", app[0], err)
		f.Fix = "install the application, or correct the desktop app's command (an absolute path, or a program on PATH)"
		return f
	}
	f.Detail = strings.Join(app, " ") + " (" + path + ")"
	if isLibreOffice(app[0]) {
		if _, err := os.Stat(libreOfficeGTK3); err != nil {
			f.Detail += "; LibreOffice's GTK 3 plugin is missing (" + libreOfficeGTK3 + "): its windows would show no controls"
			f.Fix = "install libreoffice-gtk3 (Debian)"
			return f
		}
	}
	f.OK = true
	return f
}

// libreOfficeGTK3 is Debian's LibreOffice GTK 3 plugin, which launch_app
// selects (SAL_USE_VCLPLUGIN=gtk3): LibreOffice's other plugins give
// AT-SPI nothing.
var libreOfficeGTK3 = "/usr/lib/libreoffice/program/libvclplug_gtk3lo.so"

func isLibreOffice(program string) bool {
	switch filepath.Base(program) {
	case "libreoffice", "soffice", "localc", "lowriter", "loimpress", "lodraw", "lomath", "lobase", "loweb":
		return true
	}
	return false
}
