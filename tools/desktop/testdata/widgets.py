#!/usr/bin/python3
# A GTK window with the controls select, set_value and scroll act on: a
# notebook of two tabs, a check box, a slider, and a long scrolled list.
import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

win = Gtk.Window(title="Widgets")
win.connect("destroy", Gtk.main_quit)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=4)
tabs = Gtk.Notebook()
tabs.append_page(Gtk.Label(label="first page"), Gtk.Label(label="First"))
tabs.append_page(Gtk.Label(label="second page"), Gtk.Label(label="Second"))
box.pack_start(tabs, False, False, 0)
box.pack_start(Gtk.CheckButton(label="Remember me"), False, False, 0)
scale = Gtk.Scale.new_with_range(Gtk.Orientation.HORIZONTAL, 0, 100, 1)
scale.set_size_request(300, -1)
box.pack_start(scale, False, False, 0)
lines = Gtk.TextView()
lines.get_buffer().set_text("\n".join("line %d" % i for i in range(300)))
scroller = Gtk.ScrolledWindow()
scroller.set_size_request(300, 200)
scroller.add(lines)
box.pack_start(scroller, True, True, 0)
win.add(box)
win.show_all()
Gtk.main()
