#!/usr/bin/python3
# A GTK window with N controls (default 500) for the observation benchmark:
# a grid of buttons, check boxes and entries, all on screen.
import sys

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("Gdk", "3.0")
from gi.repository import Gdk, Gtk  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
# Compact widgets, so that 500 of them fit a 1280x800 screen.
css = Gtk.CssProvider()
css.load_from_data(b"button, entry, checkbutton { padding: 0 2px; min-height: 0; margin: 0; }")
Gtk.StyleContext.add_provider_for_screen(Gdk.Screen.get_default(), css, Gtk.STYLE_PROVIDER_PRIORITY_APPLICATION)
cols = 20
win = Gtk.Window(title="Many controls")
win.connect("destroy", Gtk.main_quit)
grid = Gtk.Grid(row_spacing=2, column_spacing=2)
for i in range(n):
    kind = i % 10
    if kind == 8:
        w = Gtk.CheckButton(label=str(i))
    elif kind == 9:
        w = Gtk.Entry(text=str(i), width_chars=3)
    else:
        w = Gtk.Button(label=str(i))
    w.set_size_request(46, 26)
    grid.attach(w, i % cols, i // cols, 1, 1)
win.add(grid)
win.show_all()
Gtk.main()
