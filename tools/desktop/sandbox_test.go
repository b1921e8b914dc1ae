package desktop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/desktoptest"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/sandbox"
	"github.com/saucerhq/saucer/tools/desktop"
)

// requireSandbox skips t (fails it under CI) where this host cannot make
// sandboxes.
func requireSandbox(t *testing.T) {
	t.Helper()
	if err := sandbox.Check(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must be able to create sandboxes: %v", err)
		}
		t.Skip(err)
	}
}

// sandboxedDesktop is a device of device: sandbox with a desktop of its
// own, over a fresh work folder holding files.
func sandboxedDesktop(t *testing.T, files map[string]string) (*client.Client, string) {
	t.Helper()
	work := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfgFile := filepath.Join(t.TempDir(), "saucer.yaml")
	if err := os.WriteFile(cfgFile, []byte("device: sandbox\nsandbox: {root: /}\nmcp: {use: [shell, desktop]}\ntools: {desktop: {display: own}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := local.NewDevice(context.Background(), cfg, work, local.DeviceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev, work
}

// execute runs a tool of the device and fails t if the tool fails.
func execute(t *testing.T, dev *client.Client, ns, tool string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r := dev.Execute(ctx, command.Command{Namespace: ns, ToolName: tool, ToolType: command.Action, Parameters: args})
	if !r.OK() {
		t.Fatalf("%s.%s %v: %s %s", ns, tool, args, r.Error, r.Result)
	}
	return string(r.Result)
}

// A desktop app agent under device: sandbox works an editor that runs in
// the sandbox, on a display that runs there too: launched, observed,
// typed into and saved, its file read from the session's work folder.
// The application is a process of the sandbox, known to the desktop
// tools by its host process id (the bus inside reports the id inside),
// with none of Saucer's environment; from inside, the person's display
// (an Xvfb standing in for it, named by DISPLAY) cannot be reached, and
// nothing is written on the host outside the work folder.
func TestEditorInTheSandboxOnItsOwnDisplay(t *testing.T) {
	desktoptest.Require(t, "mousepad", "xprop")
	requireSandbox(t)
	running := existingDisplays()
	person := desktoptest.Start(t)
	t.Setenv("DISPLAY", person.Display)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", person.BusAddr)
	t.Setenv("WAYLAND_DISPLAY", "")
	t.Setenv("SAUCER_TEST_SECRET", "not for the sandbox")
	// The person's display carries a mark on its root window, to tell it
	// from any other display.
	mark := exec.Command("xprop", "-root", "-f", "_SAUCER_PERSON", "8s", "-set", "_SAUCER_PERSON", "the-person")
	mark.Env = append(os.Environ(), person.Env...)
	if out, err := mark.CombinedOutput(); err != nil {
		t.Fatalf("mark the person's display: %v %s", err, out)
	}

	dev, work := sandboxedDesktop(t, map[string]string{"note.txt": "draft\n"})

	// Launched inside, in the sandbox's working folder: the relative
	// path is the work folder's file.
	var eff desktop.Effect
	if err := json.Unmarshal([]byte(execute(t, dev, "desktop", "launch_app", map[string]any{"command": []string{"mousepad", "note.txt"}})), &eff); err != nil {
		t.Fatal(err)
	}
	if len(eff.NewWindows) == 0 || eff.Window == nil {
		t.Fatalf("launch_app found no window: %+v", eff)
	}
	w := *eff.Window
	// Its window's process is the editor, by its id on the host: a
	// process of the sandbox (another PID namespace than this test's).
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", w.PID))
	if w.PID <= 0 || strings.TrimSpace(string(comm)) != "mousepad" {
		t.Fatalf("the window's pid %d is %q on the host, not the editor: the id inside the sandbox was taken for the host's", w.PID, comm)
	}
	ours, _ := os.Readlink("/proc/self/ns/pid")
	if theirs, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", w.PID)); theirs == ours || theirs == "" {
		t.Fatalf("the editor (pid %d) runs in this process's PID namespace %s, not the sandbox's", w.PID, ours)
	}
	environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", w.PID))
	// (Its DISPLAY may read as the person's, :0 in another /tmp and
	// network: the probe below tells the displays apart.)
	if bytes.Contains(environ, []byte("SAUCER_TEST_SECRET")) || bytes.Contains(environ, []byte(person.BusAddr)) {
		t.Fatalf("the editor got Saucer's environment: %q", bytes.ReplaceAll(environ, []byte{0}, []byte{' '}))
	}

	obs := execute(t, dev, "desktop", "observe", map[string]any{"window": w.ID, "screenshot": false})
	m := regexp.MustCompile(`\[(\d+)\] text [^\n]*editable`).FindStringSubmatch(obs)
	if m == nil {
		t.Fatalf("no editable text in the editor's window:\n%s", obs)
	}
	id, _ := strconv.Atoi(m[1])
	execute(t, dev, "desktop", "click", map[string]any{"id": id})
	execute(t, dev, "desktop", "press_keys", map[string]any{"id": id, "keys": []string{"ctrl+End"}})
	execute(t, dev, "desktop", "type_text", map[string]any{"id": id, "text": "typed in the sandbox"})
	execute(t, dev, "desktop", "press_keys", map[string]any{"keys": []string{"ctrl+s"}, "window": w.ID})
	want := "draft\ntyped in the sandbox"
	var got []byte
	for deadline := time.Now().Add(30 * time.Second); ; {
		got, _ = os.ReadFile(filepath.Join(work, "note.txt"))
		if strings.TrimSpace(string(got)) == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the work folder's note.txt holds %q, want %q", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// From inside (the shell runs in the sandbox, with the display's
	// variables, as the editor does): the person's display is out of
	// reach by any number, the sandbox's own is there, and the host's
	// folders are not written.
	probe := `for n in 0 1 2 3 4 5 6 7 8 9; do xprop -display :$n -root _SAUCER_PERSON 2>/dev/null; done
xprop -root -f _SAUCER_AGENT 8s -set _SAUCER_AGENT mine && xprop -root _SAUCER_AGENT
for d in /tmp /run /var/tmp; do echo x > $d/saucer-escape-probe && echo "wrote $d"; done
echo inside > inside.txt`
	var sh struct {
		Stdout string `json:"stdout"`
	}
	if err := json.Unmarshal([]byte(execute(t, dev, "shell", "execute_command", map[string]any{"command": probe})), &sh); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sh.Stdout, "the-person") {
		t.Fatalf("the person's display is reachable from inside the sandbox:\n%s", sh.Stdout)
	}
	if !strings.Contains(sh.Stdout, `_SAUCER_AGENT(STRING) = "mine"`) {
		t.Fatalf("the sandbox's own display is not reachable from inside:\n%s", sh.Stdout)
	}
	for _, d := range []string{"/tmp", "/run", "/var/tmp"} {
		if _, err := os.Stat(filepath.Join(d, "saucer-escape-probe")); err == nil {
			os.Remove(filepath.Join(d, "saucer-escape-probe"))
			t.Fatalf("a write to %s inside the sandbox reached the host's %s", d, d)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(work, "inside.txt")); string(b) != "inside\n" {
		t.Fatalf("the work folder's inside.txt holds %q: the sandbox's working folder is not the session's", b)
	}
	// The display's host folder holds only the way to its X socket: its
	// home, buses and cookie are inside.
	for _, dir := range existingDisplays() {
		if slices.Contains(running, dir) || dir == person.Dir() {
			continue
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), "X:") {
				t.Fatalf("the sandboxed display wrote %s on the host", filepath.Join(dir, e.Name()))
			}
		}
	}
	dev.Close()
	if left := displayLeftovers(append(running, person.Dir())...); len(left) > 0 {
		t.Fatalf("the sandboxed desktop left %v", left)
	}
}
