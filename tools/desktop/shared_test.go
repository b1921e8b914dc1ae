package desktop

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/desktoptest"
	owndisplay "github.com/saucerhq/saucer/internal/display"
)

// The applications that start slowly (LibreOffice takes seconds, more on
// a loaded machine) run once per test binary, on one shared desktop:
// the tests that use them observe and act on their own windows only.
var shared struct {
	mu   sync.Mutex
	s    *desktoptest.Session
	d    *Desktop
	apps map[string]*launched
	// dir holds files the shared applications were started on: it lives
	// as long as they do (a test's TempDir would go with its first test).
	dir string
}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.mu.Lock()
	if shared.d != nil {
		shared.d.Close()
	}
	if shared.s != nil {
		shared.s.Close()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	shared.mu.Unlock()
	os.Exit(code)
}

// sharedDesktop is the shared desktop, started on first use.
func sharedDesktop(t testing.TB) (*desktoptest.Session, *Desktop) {
	t.Helper()
	desktoptest.Require(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.s == nil {
		s, err := desktoptest.New(context.Background(), owndisplay.Xvfb)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.PrepareLibreOffice(); err != nil {
			t.Fatal(err)
		}
		shared.s, shared.apps = s, map[string]*launched{}
		shared.d = New(Options{Display: s.Display, Bus: s.BusAddr, Env: s.Env, LaunchTimeout: 90 * time.Second})
	}
	return shared.s, shared.d
}

// sharedDir is a folder that lasts as long as the shared applications.
func sharedDir(t testing.TB) string {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.dir == "" {
		dir, err := os.MkdirTemp("", "saucer-desktop-test-")
		if err != nil {
			t.Fatal(err)
		}
		shared.dir = dir
	}
	return shared.dir
}

// sharedApp is the window of an application on the shared desktop,
// launched on first use under name: its launch's first window as it is
// now (LibreOffice replaces its first window with another).
func sharedApp(t testing.TB, name string, cmd ...string) (*desktoptest.Session, *Desktop, Window) {
	t.Helper()
	desktoptest.Require(t, cmd[0])
	s, d := sharedDesktop(t)
	shared.mu.Lock()
	p, ok := shared.apps[name]
	shared.mu.Unlock()
	if !ok {
		if _, err := d.Launch(context.Background(), cmd, ""); err != nil {
			t.Fatal(err)
		}
		p = d.launched[len(d.launched)-1]
		shared.mu.Lock()
		shared.apps[name] = p
		shared.mu.Unlock()
	}
	ws, err := d.Windows(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var mine []Window
	for _, w := range ws {
		if p.owns(w.PID) {
			mine = append(mine, w)
		}
	}
	for _, w := range mine {
		if !dialogRoles[w.Role] {
			return s, d, w
		}
	}
	if len(mine) > 0 {
		return s, d, mine[0] // a dialog of its own (the file chooser)
	}
	t.Fatalf("%s has no window open: %+v", name, ws)
	return nil, nil, Window{}
}

// walked is the independent walk's view of a window
// (testdata/atspi_walk.py).
type walked struct {
	Window      Rect          `json:"window"`
	SetsShowing bool          `json:"sets_showing"`
	Controls    []walkControl `json:"controls"`
}

type walkControl struct {
	Role   string `json:"role"`
	Name   string `json:"name"`
	X      int    `json:"x"`
	Y      int    `json:"y"`
	W      int    `json:"w"`
	H      int    `json:"h"`
	Row    *int   `json:"row"`
	Column *int   `json:"column"`
	Table  *Rect  `json:"table"`
}

// walk runs the independent AT-SPI walk over window w.
func walk(t testing.TB, s *desktoptest.Session, w Window) walked {
	t.Helper()
	desktoptest.Require(t, "/usr/bin/python3")
	if err := exec.Command("/usr/bin/python3", "-c", "import pyatspi").Run(); err != nil {
		desktoptest.Require(t, "python3-pyatspi (import pyatspi failed)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", filepath.Join("testdata", "atspi_walk.py"), w.App, w.Title, "1280", "800")
	cmd.Env = append(os.Environ(), s.Env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("the AT-SPI walk of %s %q failed: %v\n%s", w.App, w.Title, err, stderr)
	}
	var res walked
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("the AT-SPI walk printed %q: %v", out, err)
	}
	return res
}
