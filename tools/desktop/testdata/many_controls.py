#!/usr/bin/python3
# A GTK window with N controls (default 500) for the observation benchmark:
# a grid of buttons, check boxes and entries, all on screen.
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
cols = 25
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
