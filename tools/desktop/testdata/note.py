#!/usr/bin/python3
# A GTK 3 window holding one multi-line text view, for the window tests:
#   note.py TITLE [WIDTH HEIGHT]
# WIDTH and HEIGHT make it open that small (as LibreOffice reopened at
# 24x26 pixels without a window manager).
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

win = Gtk.Window(title=sys.argv[1])
view = Gtk.TextView()
win.add(view)
if len(sys.argv) > 3:
    w, h = int(sys.argv[2]), int(sys.argv[3])
    view.set_size_request(1, 1)
    win.set_default_size(w, h)
    win.resize(w, h)
else:
    win.set_default_size(300, 200)
win.connect("destroy", Gtk.main_quit)
win.show_all()
view.grab_focus()
Gtk.main()
