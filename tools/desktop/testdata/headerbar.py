#!/usr/bin/python3
# A GTK 3 window with a header bar (its own frame: under Wayland it draws
# a shadow around itself) and four small buttons; a click on one names it
# in the title ("Header: clicked C"). With "dialog", it also opens an
# untitled-for-the-compositor dialog with one button ("Dialog: clicked OK").
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

win = Gtk.Window()
bar = Gtk.HeaderBar(title="Header", show_close_button=True)
win.set_titlebar(bar)
grid = Gtk.Grid(column_spacing=40, row_spacing=40, margin=40)
for i, name in enumerate("ABCD"):
    b = Gtk.Button(label=name)
    b.set_size_request(60, 24)
    b.connect("clicked", lambda _b, n=name: win.set_title("Header: clicked " + n))
    grid.attach(b, i % 2, i // 2, 1, 1)
win.add(grid)
win.connect("destroy", Gtk.main_quit)
win.show_all()
if sys.argv[1:] == ["dialog"]:
    dlg = Gtk.Dialog(transient_for=win)
    dlg.set_title("Dialog")
    ok = Gtk.Button(label="OK")
    ok.connect("clicked", lambda _b: win.set_title("Dialog: clicked OK"))
    dlg.get_content_area().add(ok)
    dlg.show_all()
Gtk.main()
