#!/usr/bin/python3
# A GTK 3 window where Return means something other than a line break,
# for the typing tests: a multi-line "Console" that takes Return as "run
# this line" (as a terminal, a calculator or a spreadsheet cell does), and
# a one-line "Entry" whose Return activates it. Its title counts them:
#   "Enter: console 12+30 (1) | entry 7*6 (1)"
import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gdk, Gtk  # noqa: E402

state = {"console": ("", 0), "entry": ("", 0)}


def retitle():
    win.set_title("Enter: console %s (%d) | entry %s (%d)" % (state["console"] + state["entry"]))


def console_key(view, ev):
    if ev.keyval in (Gdk.KEY_Return, Gdk.KEY_KP_Enter):
        buf = view.get_buffer()
        text = buf.get_text(buf.get_start_iter(), buf.get_end_iter(), False)
        state["console"] = (text, state["console"][1] + 1)
        retitle()
        return True  # no line break: Return ran the line
    return False


def entry_activate(entry):
    state["entry"] = (entry.get_text(), state["entry"][1] + 1)
    retitle()


win = Gtk.Window(title="Enter")
win.set_default_size(400, 200)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
entry = Gtk.Entry()
entry.get_accessible().set_name("Entry")
entry.connect("activate", entry_activate)
view = Gtk.TextView()
view.get_accessible().set_name("Console")
view.connect("key-press-event", console_key)
box.pack_start(entry, False, False, 0)
box.pack_start(view, True, True, 0)
win.add(box)
win.connect("destroy", Gtk.main_quit)
win.show_all()
retitle()
Gtk.main()
