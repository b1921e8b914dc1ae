package desktop

import (
	"encoding/json"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jezek/xgb/xproto"
)

func TestParseChord(t *testing.T) {
	for _, c := range []struct {
		in   string
		mods []xproto.Keysym
		key  xproto.Keysym
		err  string
	}{
		{in: "ctrl+s", mods: []xproto.Keysym{0xffe3}, key: 's'},
		{in: "Return", key: 0xff0d},
		{in: "ctrl+shift+Tab", mods: []xproto.Keysym{0xffe3, 0xffe1}, key: 0xff09},
		{in: "ctrl++", mods: []xproto.Keysym{0xffe3}, key: '+'},
		{in: "é", key: 0xe9},
		{in: "€", key: 0x1000000 + 0x20ac},
		{in: "hyper+x", err: `"hyper" in "hyper+x" is not a modifier (ctrl, shift, alt, super)`},
		{in: "ctrl+Enterr", err: `unknown key "Enterr" in "ctrl+Enterr": use one character or a name such as Return, Tab, Escape, BackSpace, Delete, Home, End, Left, Up, Right, Down, Page_Up, Page_Down, space, F1-F12`},
	} {
		mods, key, err := parseChord(c.in)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || key != c.key || !reflect.DeepEqual(mods, c.mods) {
			t.Errorf("%q: %v %#x %v, want %v %#x", c.in, mods, key, err, c.mods, c.key)
		}
	}
}

func TestAnnotateDrawsIDs(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 100, 60))
	annotate(img, []mark{{id: 7, box: image.Rect(10, 10, 60, 50)}, {id: 12, box: image.Rect(95, 55, 140, 90)}})
	c := markColours[0]
	// The outline is drawn on all four sides.
	for _, p := range []image.Point{{30, 10}, {30, 49}, {10, 30}, {59, 30}} {
		if got := img.RGBAAt(p.X, p.Y); got != c {
			t.Errorf("outline pixel %v is %v, want %v", p, got, c)
		}
	}
	// Inside, the box is untouched.
	if got := img.RGBAAt(35, 35); got != (color.RGBA{}) {
		t.Errorf("inside pixel is %v", got)
	}
	// "7" in white: its top row is three font pixels wide.
	white := color.RGBA{255, 255, 255, 255}
	x, y := 10+fontScale, 10+fontScale
	for col := range 3 {
		if got := img.RGBAAt(x+col*fontScale, y); got != white {
			t.Errorf("digit 7 top row, column %d: %v", col, got)
		}
	}
	// A box at the edge keeps its label inside the image.
	label := image.Rect(100-(2*4*fontScale+fontScale), 60-7*fontScale, 100, 60)
	if got := img.RGBAAt(label.Min.X, label.Min.Y); got != markColours[1] {
		t.Errorf("the edge label's corner is %v, want %v", got, markColours[1])
	}
}

func TestDesktopExec(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "calc.desktop")
	os.WriteFile(f, []byte("[Desktop Entry]\nName=Calc\nExec=galculator --mode \"basic\" %U\n[Desktop Action New]\nExec=other\n"), 0o644)
	args, err := desktopExec(f)
	if err != nil || !reflect.DeepEqual(args, []string{"galculator", "--mode", "basic"}) {
		t.Fatalf("%v %v", args, err)
	}
	os.WriteFile(f, []byte("[Desktop Action New]\nExec=other\n"), 0o644)
	if _, err := desktopExec(f); err == nil {
		t.Fatal("a file without an Exec in [Desktop Entry] was accepted")
	}
}

func TestNoDisplay(t *testing.T) {
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	d := New(Options{})
	defer d.Close()
	_, err := d.Windows(t.Context())
	if err == nil || !strings.HasPrefix(err.Error(), "no display: neither DISPLAY nor WAYLAND_DISPLAY is set") {
		t.Fatalf("%v", err)
	}
	d = New(Options{Wayland: filepath.Join(t.TempDir(), "wayland-9")})
	if _, err := d.Windows(t.Context()); err == nil || !strings.Contains(err.Error(), "connect to the Wayland compositor at") {
		t.Fatalf("%v", err)
	}
	d = New(Options{Display: ":987"})
	if _, err := d.Windows(t.Context()); err == nil || !strings.Contains(err.Error(), "open the X display :987") {
		t.Fatalf("%v", err)
	}
}

func TestExecArgs(t *testing.T) {
	for in, want := range map[string][]string{
		`galculator --mode "basic" %U`:               {"galculator", "--mode", "basic"},
		`sh -c "galculator & wait"`:                  {"sh", "-c", "galculator & wait"},
		`app "a \"quoted\" \\$HOME" --file=%f 100%%`: {"app", `a "quoted" $HOME`, "--file=", "100%"},
		`  spaced   out  `:                           {"spaced", "out"},
		`app ""`:                                     {"app"},
	} {
		got, err := execArgs(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %q %v, want %q", in, got, err, want)
		}
	}
	if _, err := execArgs(`sh -c "unclosed`); err == nil || !strings.Contains(err.Error(), "unclosed quote") {
		t.Errorf("an unclosed quote: %v", err)
	}
}

func TestCellNames(t *testing.T) {
	for _, c := range []struct {
		name     string
		row, col int
	}{{"A1", 0, 0}, {"B7", 6, 1}, {"Z10", 9, 25}, {"AA1", 0, 26}, {"XFD1048576", 1048575, 16383}} {
		if got := cellName(c.row, c.col); got != c.name {
			t.Errorf("cellName(%d, %d) = %s, want %s", c.row, c.col, got, c.name)
		}
		r, col, err := parseCell(strings.ToLower(c.name))
		if err != nil || r != c.row || col != c.col {
			t.Errorf("parseCell(%s) = %d, %d, %v", c.name, r, col, err)
		}
	}
	for _, bad := range []string{"", "7B", "B", "B0", "ABCD1", "B-1"} {
		if _, _, err := parseCell(bad); err == nil {
			t.Errorf("parseCell(%q) was accepted", bad)
		}
	}
	table := ref{":1.5", "/org/a11y/atspi/accessible/12"}
	if tb, r, c, ok := parseCellRef(cellRef(table, 6, 1)); !ok || tb != table || r != 6 || c != 1 {
		t.Errorf("cell refs do not round-trip: %v %d %d %v", tb, r, c, ok)
	}
	if _, _, _, ok := parseCellRef(table); ok {
		t.Error("an object's own path was read as a cell")
	}
}

func TestSubtract(t *testing.T) {
	r := Rect{0, 0, 100, 100}
	area := func(rs []Rect) int {
		n := 0
		for _, x := range rs {
			n += x.W * x.H
		}
		return n
	}
	for _, c := range []struct {
		cut  Rect
		left int
	}{{Rect{0, 0, 100, 100}, 0}, {Rect{25, 25, 50, 50}, 7500}, {Rect{-10, -10, 60, 60}, 7500}, {Rect{200, 200, 5, 5}, 10000}, {Rect{0, 0, 100, 10}, 9000}} {
		if got := area(subtract(r, c.cut)); got != c.left {
			t.Errorf("%+v minus %+v leaves %d pixels, want %d", r, c.cut, got, c.left)
		}
	}
}

// TestInstalledAppsAreListed: the applications a model may launch are
// read from desktop files, the first of a name winning, without those
// hidden from menus.
func TestInstalledAppsAreListed(t *testing.T) {
	mine, system := t.TempDir(), t.TempDir()
	write := func(dir, name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(system, "com.github.maoschanz.drawing.desktop", "[Desktop Entry]\nType=Application\nName=Drawing\nName[fr]=Dessin\nExec=/usr/bin/drawing %U\n")
	write(system, "calc.desktop", "[Desktop Entry]\nType=Application\nName=Calculator\nExec=galculator\n")
	write(mine, "calc.desktop", "[Desktop Entry]\nType=Application\nName=My calculator\nExec=bc\n")
	write(system, "helper.desktop", "[Desktop Entry]\nType=Application\nName=Helper\nNoDisplay=true\n")
	write(system, "link.desktop", "[Desktop Entry]\nType=Link\nName=A link\n")
	write(system, "notes.txt", "[Desktop Entry]\nName=Not a desktop file\n")
	got := installedApps([]string{mine, system})
	if want := []string{"Drawing: drawing", "My calculator: bc"}; !slices.Equal(got, want) {
		t.Fatalf("installed apps %q, want %q", got, want)
	}
}

// TestCommandTakesAString: launch_app's command is an array, and a string
// is split as a desktop file's Exec line is (a model in the seat sent
// one, and lost a step to the error).
func TestCommandTakesAString(t *testing.T) {
	var a launchArgs
	if err := json.Unmarshal([]byte(`{"command": "mtpaint \"my dots.png\""}`), &a); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Command, argv{"mtpaint", "my dots.png"}) {
		t.Fatalf("command %q", a.Command)
	}
	if err := json.Unmarshal([]byte(`{"command": ["drawing", "dots.png"]}`), &a); err != nil || !slices.Equal(a.Command, argv{"drawing", "dots.png"}) {
		t.Fatalf("command %q, %v", a.Command, err)
	}
	if err := json.Unmarshal([]byte(`{"command": 7}`), &a); err == nil || !strings.Contains(err.Error(), "array of strings") {
		t.Fatalf("a number was taken: %v", err)
	}
}

// TestBoxesNote: an observation of a window that does not start at the
// screen's corner says how its listed boxes (the screen's pixels) map
// onto its screenshot; models in the seat met both and were unsure.
func TestBoxesNote(t *testing.T) {
	if n := boxesNote(Frame{Window: "w1", Area: Rect{0, 0, 600, 400}, Scale: 1, Width: 600, Height: 400}); n != "" {
		t.Errorf("a window at 0,0: %q", n)
	}
	if n := boxesNote(Frame{Window: "w2", Area: Rect{175, 237, 560, 81}, Scale: 1, Width: 560, Height: 81}); !strings.Contains(n, "@x,y is at x-175,y-237") {
		t.Errorf("a window at 175,237: %q", n)
	}
	if n := boxesNote(Frame{Window: "w2", Area: Rect{10, 10, 1000, 800}, Scale: 0.5, Width: 500, Height: 400}); !strings.Contains(n, "(x-10)*0.5,(y-10)*0.5") {
		t.Errorf("a half-size screenshot: %q", n)
	}
	if n := boxesNote(Frame{Area: Rect{10, 10, 1000, 800}, Scale: 1}); n != "" {
		t.Errorf("the screen's screenshot: %q", n)
	}
}
