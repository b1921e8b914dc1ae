#!/usr/bin/python3
# A GTK 3 window whose controls move without being acted on, for the
# test of boxes kept between observations: on SIGUSR1 the button
# "Target" moves 100 pixels right; on SIGUSR2 the list of buttons below
# scrolls down 60 pixels.
import signal

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk  # noqa: E402

win = Gtk.Window(title="Moving")
win.connect("destroy", Gtk.main_quit)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=4)
fixed = Gtk.Fixed()
fixed.set_size_request(300, 50)
target = Gtk.Button(label="Target")
fixed.put(target, 10, 10)
box.pack_start(fixed, False, False, 0)
rows = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
for i in range(30):
    rows.pack_start(Gtk.Button(label="Row %d" % i), False, False, 0)
scroller = Gtk.ScrolledWindow()
scroller.set_size_request(300, 200)
scroller.add(rows)
box.pack_start(scroller, True, True, 0)
win.add(box)


def move():
    fixed.move(target, 110, 10)
    return GLib.SOURCE_REMOVE


def scroll():
    adj = scroller.get_vadjustment()
    adj.set_value(adj.get_value() + 60)
    return GLib.SOURCE_REMOVE


GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGUSR1, move)
GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGUSR2, scroll)
win.show_all()
Gtk.main()
