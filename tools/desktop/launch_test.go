package desktop

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestLaunchThroughWrappers launches applications the ways a desktop
// does, through something that starts them, and checks that the window
// launch_app returns is theirs: a shell that forks and waits, a shell
// that forks and exits, a desktop file whose Exec forks, and a second
// launch of a single-instance application, whose window the running
// instance opens (found by its startup notification id).
func TestLaunchThroughWrappers(t *testing.T) {
	_, d := start(t, "galculator", "gnome-text-editor")
	ctx := context.Background()
	desktopFile := filepath.Join(t.TempDir(), "calc.desktop")
	if err := os.WriteFile(desktopFile, []byte("[Desktop Entry]\nType=Application\nName=Calc\nExec=sh -c \"galculator & wait\" %U\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		command     []string
		desktopFile string
	}{
		{"shell forks and waits", []string{"sh", "-c", "galculator; true"}, ""},
		{"shell forks and exits", []string{"sh", "-c", "galculator &"}, ""},
		{"desktop file whose Exec forks", nil, desktopFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eff, err := d.Launch(ctx, tc.command, tc.desktopFile)
			if err != nil {
				t.Fatal(err)
			}
			w := eff.NewWindows[0]
			p := d.launched[len(d.launched)-1]
			if w.App != "galculator" || w.PID == p.cmd.Process.Pid {
				t.Fatalf("launched %v (pid %d) and got %+v: want galculator's window, of a process the wrapper started", p.cmd.Args, p.cmd.Process.Pid, w)
			}
			if !p.owns(w.PID) || !d.launchedWindow(w) {
				t.Fatalf("the window of pid %d is not counted as the launch's", w.PID)
			}
			if _, err := d.CloseWindow(ctx, w.ID); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("single instance, second launch", func(t *testing.T) {
		first, err := d.Launch(ctx, []string{"gnome-text-editor"}, "")
		if err != nil {
			t.Fatal(err)
		}
		eff, err := d.Launch(ctx, []string{"gnome-text-editor", "--new-window"}, "")
		if err != nil {
			t.Fatal(err)
		}
		w := eff.NewWindows[0]
		second := d.launched[len(d.launched)-1]
		if w.ref == first.NewWindows[0].ref || w.PID != first.NewWindows[0].PID || second.owns(w.PID) {
			t.Fatalf("the second launch returned %+v; want a new window of the first instance (pid %d)", w, first.NewWindows[0].PID)
		}
		xw, ok := d.xwindow(w)
		if !ok || xw.startupID != second.startupID {
			t.Fatalf("the new window carries startup id %q, want the second launch's %q", xw.startupID, second.startupID)
		}
	})
}
