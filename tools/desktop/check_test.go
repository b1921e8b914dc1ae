package desktop

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/internal/desktoptest"
	owndisplay "github.com/saucerhq/saucer/internal/display"
)

// findings indexes Check's findings by what they looked at.
func findings(t *testing.T, fs []Finding) map[string]Finding {
	t.Helper()
	m := map[string]Finding{}
	for _, f := range fs {
		m[f.What] = f
	}
	return m
}

// TestCheckHealthyDesktop: on a working desktop every part is OK, the
// AT-SPI bus names the applications registered on it, and the app's
// command is found on PATH.
func TestCheckHealthyDesktop(t *testing.T) {
	s, d := start(t, "galculator")
	launch(t, d, "galculator")
	got := findings(t, Check(context.Background(), Options{Display: s.Display, Bus: s.BusAddr, App: []string{"galculator"}}))
	for _, what := range []string{"display", "session bus", "AT-SPI bus", "app command"} {
		if f, ok := got[what]; !ok || !f.OK {
			t.Errorf("%s: %+v (found: %v), want OK", what, f, ok)
		}
	}
	if !strings.Contains(got["AT-SPI bus"].Detail, "galculator") {
		t.Errorf("the AT-SPI bus's finding does not name the running galculator: %q", got["AT-SPI bus"].Detail)
	}
	if !strings.Contains(got["display"].Detail, s.Display) {
		t.Errorf("the display's finding does not name %s: %q", s.Display, got["display"].Detail)
	}
}

// TestCheckSaysWhatIsMissing: each missing part is a failed finding
// with a fix, and one missing part does not hide the others.
func TestCheckSaysWhatIsMissing(t *testing.T) {
	desktoptest.Require(t)
	dir := t.TempDir()
	ctx := context.Background()

	// No X server on the display, no bus at the address, no program.
	got := findings(t, Check(ctx, Options{Display: ":1999", Bus: "unix:path=" + filepath.Join(dir, "no-bus"), App: []string{"no-such-calculator"}}))
	for what, want := range map[string]string{"display": ":1999", "session bus": "no-bus", "AT-SPI bus": "not checked", "app command": "no-such-calculator"} {
		f := got[what]
		if f.OK || !strings.Contains(f.Detail, want) || (what != "AT-SPI bus" && f.Fix == "") {
			t.Errorf("%s: %+v, want a failure naming %q, with a fix", what, f, want)
		}
	}

	// A session bus without the accessibility bus: the session bus is
	// fine, the AT-SPI bus is what is missing. The bus's configuration
	// has no service folders, so nothing starts the AT-SPI launcher.
	conf := filepath.Join(dir, "bus.conf")
	os.WriteFile(conf, []byte(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:path=`+filepath.Join(dir, "bus")+`</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy></busconfig>`), 0o644)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	bus := exec.Command(owndisplay.BusDaemon, "--config-file="+conf, "--nofork", "--nosyslog", "--print-address=3")
	bus.ExtraFiles = []*os.File{w}
	if err := bus.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { bus.Process.Kill(); bus.Wait() })
	addr := make([]byte, 512)
	n, err := r.Read(addr) // the bus prints its address once it listens
	if err != nil {
		t.Fatalf("the bus printed no address: %v", err)
	}
	got = findings(t, Check(ctx, Options{Display: ":1999", Bus: strings.TrimSpace(string(addr[:n]))}))
	if f := got["session bus"]; !f.OK {
		t.Errorf("session bus: %+v, want OK", f)
	}
	if f := got["AT-SPI bus"]; f.OK || !strings.Contains(f.Detail, "org.a11y.Bus") || !strings.Contains(f.Fix, "at-spi2-core") {
		t.Errorf("AT-SPI bus: %+v, want a failure naming org.a11y.Bus and at-spi2-core", f)
	}
	if _, ok := got["app command"]; ok {
		t.Error("an app command was checked with no app named")
	}
}

// TestCheckAppLibreOfficeWithoutGTK3: LibreOffice without its GTK 3
// plugin shows AT-SPI nothing, which Check says.
func TestCheckAppLibreOfficeWithoutGTK3(t *testing.T) {
	bin := t.TempDir()
	localc := filepath.Join(bin, "localc")
	os.WriteFile(localc, []byte("#!/bin/sh\n"), 0o755)
	defer func(p string) { libreOfficeGTK3 = p }(libreOfficeGTK3)
	libreOfficeGTK3 = filepath.Join(bin, "libvclplug_gtk3lo.so")
	if f := CheckApp([]string{localc, "--norestore"}, ""); f.OK || !strings.Contains(f.Fix, "libreoffice-gtk3") {
		t.Errorf("without the plugin: %+v", f)
	}
	os.WriteFile(libreOfficeGTK3, nil, 0o644)
	if f := CheckApp([]string{localc, "--norestore"}, ""); !f.OK {
		t.Errorf("with the plugin: %+v", f)
	}
	// A relative path is run from the working directory, and found there.
	if f := CheckApp([]string{"./localc"}, bin); !f.OK || !strings.Contains(f.Detail, localc) {
		t.Errorf("./localc from %s: %+v", bin, f)
	}
}
