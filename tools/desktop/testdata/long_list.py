#!/usr/bin/python3
# A GTK 3 window with a long list: a tree view of N rows (default 5000)
# and two columns in a scrolled window. GTK's tree view manages its
# descendants: its cells are made on demand, never all at once.
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
store = Gtk.ListStore(str, str)
for i in range(n):
    store.append(["Item %d" % (i + 1), "value %d" % ((i + 1) * 7)])
view = Gtk.TreeView(model=store)
for col, title in enumerate(["Name", "Value"]):
    view.append_column(Gtk.TreeViewColumn(title, Gtk.CellRendererText(), text=col))
scroller = Gtk.ScrolledWindow()
scroller.add(view)
win = Gtk.Window(title="Long list")
win.set_default_size(400, 500)
win.connect("destroy", Gtk.main_quit)
win.add(scroller)
win.show_all()
Gtk.main()
