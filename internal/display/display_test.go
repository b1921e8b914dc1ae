package display

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/proctag"

	"github.com/saucerhq/saucer/internal/hosttest"

	"github.com/godbus/dbus/v5"
)

// require skips t (or fails it under CI) unless kind and the apps can run.
func require(t *testing.T, kind Kind, apps ...string) {
	t.Helper()
	msg := Missing(kind)
	for _, a := range apps {
		if _, err := exec.LookPath(a); err != nil {
			msg += " " + a
		}
	}
	if msg == "" {
		return
	}
	msg = "a desktop of its own on " + string(kind) + " needs " + msg + " (see .ci/run)"
	hosttest.Missing(t, "%s", msg)
}

// tagged lists the live (not zombie) processes whose environment carries
// the display's tag.
func tagged(tag string) []string {
	var out []string
	proctag.Each(tagVar, func(pid int, v string) {
		if v == tag {
			out = append(out, strconv.Itoa(pid)+" "+proctag.Command(pid))
		}
	})
	return out
}

// appNames lists the applications on the display's AT-SPI bus.
func appNames(t *testing.T, d *Display) []string {
	t.Helper()
	conn, err := dbus.Connect(d.Bus)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var addr string
	if err := conn.Object("org.a11y.Bus", "/org/a11y/bus").Call("org.a11y.Bus.GetAddress", 0).Store(&addr); err != nil {
		t.Fatal(err)
	}
	a, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var kids []struct {
		Bus  string
		Path dbus.ObjectPath
	}
	if err := a.Object("org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root").
		Call("org.a11y.atspi.Accessible.GetChildren", 0).Store(&kids); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, k := range kids {
		var v dbus.Variant
		if a.Object(k.Bus, k.Path).Call("org.freedesktop.DBus.Properties.Get", 0, "org.a11y.atspi.Accessible", "Name").Store(&v) == nil {
			names = append(names, fmt.Sprint(v.Value()))
		}
	}
	return names
}

// waitApp waits until an application named name is on the AT-SPI bus.
func waitApp(t *testing.T, d *Display, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		names := appNames(t, d)
		for _, n := range names {
			if strings.EqualFold(n, name) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear on the AT-SPI bus of the %s display; applications: %v", name, d.Kind, names)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Each kind starts, runs a GTK application that registers on the
// display's own accessibility bus, and leaves no process and no folder
// after Close.
func TestDisplayStartsAppsAndLeavesNothing(t *testing.T) {
	for _, kind := range Kinds {
		t.Run(string(kind), func(t *testing.T) {
			require(t, kind, "galculator")
			d, err := Start(context.Background(), Options{Kind: kind})
			if err != nil {
				t.Fatal(err)
			}
			closed := false
			t.Cleanup(func() {
				if !closed {
					d.Close()
				}
			})
			if kind == Xvfb && d.X11 == "" || kind != Xvfb && d.Wayland == "" {
				t.Fatalf("display %+v names no display", d)
			}
			if kind == Sway && d.SwaySock == "" {
				t.Fatal("sway's IPC socket is unknown")
			}
			if _, err := d.Launch("galculator"); err != nil {
				t.Fatal(err)
			}
			waitApp(t, d, "galculator")
			dir, pids := d.Dir(), d.Pids()
			if left := tagged(d.tag); len(left) <= len(pids) {
				t.Logf("tagged processes: %v", left)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			closed = true
			if left := tagged(d.tag); len(left) > 0 {
				t.Errorf("processes left after Close: %v", left)
			}
			for _, pid := range pids {
				if pid > 0 && syscall.Kill(pid, 0) == nil {
					t.Errorf("process %d is still running after Close", pid)
				}
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the display's folder %s is still there after Close (%v)", dir, err)
			}
		})
	}
}

// Xvfb lets in the user that started it, and refuses another local user
// without the display's cookie: nobody else can watch or drive the
// agent's desktop.
func TestXvfbLetsInOnlyItsUser(t *testing.T) {
	require(t, Xvfb, "xdpyinfo")
	if os.Getuid() != 0 {
		t.Skip("needs root, to connect as another user")
	}
	d, err := Start(context.Background(), Options{Kind: Xvfb})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	empty := filepath.Join(t.TempDir(), "none")
	os.WriteFile(empty, nil, 0o644)
	os.Chmod(filepath.Dir(empty), 0o755)
	run := func(cred *syscall.Credential, xauth string) error {
		c := exec.Command("xdpyinfo", "-display", d.X11)
		c.Env = append(os.Environ(), "XAUTHORITY="+xauth)
		c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		return c.Run()
	}
	if err := run(nil, empty); err != nil {
		t.Fatalf("the display's own user, without the cookie, was refused: %v", err)
	}
	if err := run(compositorUser(), empty); err == nil {
		t.Fatal("another local user (nobody) connected without the cookie")
	}
}

// helperEnv makes the test binary a Saucer that starts a display,
// launches an application, prints the display's folder and waits to be
// killed.
const helperEnv = "SAUCER_DISPLAY_TEST_HELPER"

func TestMain(m *testing.M) {
	if kind := os.Getenv(helperEnv); kind != "" {
		d, err := Start(context.Background(), Options{Kind: Kind(kind)})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		if _, err := d.Launch("galculator"); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		b, _ := json.Marshal(map[string]string{"dir": d.Dir(), "tag": d.tag, "bus": d.Bus})
		fmt.Println(string(b))
		select {} // until killed
	}
	os.Exit(m.Run())
}

// A Saucer killed with SIGKILL leaves its display's processes (what its
// children started) and folder; the next Saucer's first display removes
// them.
func TestSweepRemovesWhatAKilledSaucerLeft(t *testing.T) {
	require(t, Sway, "galculator")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(exe, "-test.run", "^$")
	c.Env = append(os.Environ(), helperEnv+"=sway")
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if c.Process.Pid > 0 {
			_ = syscall.Kill(c.Process.Pid, syscall.SIGKILL)
		}
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the helper printed nothing: %v", err)
	}
	var got struct{ Dir, Tag, Bus string }
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("the helper said %q", line)
	}
	d := &Display{Kind: Sway, Bus: got.Bus}
	waitApp(t, d, "galculator") // the buses' services are running now
	if c.Process.Pid <= 0 {
		t.Fatal("no helper pid")
	}
	if err := syscall.Kill(c.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	if _, err := os.Stat(got.Dir); err != nil {
		t.Fatalf("the killed helper's folder is already gone (%v): the test proves nothing", err)
	}
	if alive, ok := ownerAlive(filepath.Base(got.Dir)); !ok || alive {
		t.Fatalf("the folder %s does not name a dead owner (alive %v, ok %v)", got.Dir, alive, ok)
	}
	sweep()
	if _, err := os.Stat(got.Dir); !os.IsNotExist(err) {
		t.Errorf("the sweep left the folder %s (%v)", got.Dir, err)
	}
	if left := tagged(got.Tag); len(left) > 0 {
		t.Errorf("the sweep left processes of the killed Saucer's display: %v", left)
	}
}

// The sweep never touches the display of a live owner.
func TestSweepLeavesLiveDisplays(t *testing.T) {
	require(t, Xvfb)
	d, err := Start(context.Background(), Options{Kind: Xvfb})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	sweep()
	if _, err := os.Stat(d.Dir()); err != nil {
		t.Fatalf("the sweep removed a live display's folder: %v", err)
	}
	if len(tagged(d.tag)) < 3 {
		t.Fatalf("the sweep killed a live display's processes; left: %v", tagged(d.tag))
	}
}

// As root, sway runs as nobody: a private TMPDIR it cannot pass is
// refused with the folder and the fix, not left to sway's "Unable to
// open wayland socket".
func TestSwayUnderAPrivateTmpdirSaysWhy(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only root runs sway as another user")
	}
	require(t, Sway)
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", private)
	d, err := Start(context.Background(), Options{Kind: Sway})
	if err == nil {
		d.Close()
		t.Fatal("sway started under a folder nobody can pass")
	}
	if !strings.Contains(err.Error(), "chmod o+x "+private) {
		t.Fatalf("the error does not say what to do: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(private, "*")); len(left) != 0 {
		t.Errorf("the refused start left %v", left)
	}
}
