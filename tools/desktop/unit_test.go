package desktop

import (
	"image"
	"image/color"
	"os"
	"path/filepath"
	"reflect"
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
