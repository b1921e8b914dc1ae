#!/usr/bin/python3
# A GTK 3 window that says in its title how long its last key was held:
#   "Keys: down Right" while it is, then "Keys: up Right after 512 ms +shift"
# (with the modifiers held when it went down; modifier keys alone are not
# reported).
import time

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gdk, Gtk  # noqa: E402

win = Gtk.Window(title="Keys: none")
win.set_default_size(300, 200)
down = {}
MODIFIERS = {"Shift", "Control", "Alt", "Super", "Meta", "ISO"}


def mods(state):
    out = ""
    for mask, name in ((Gdk.ModifierType.CONTROL_MASK, "ctrl"), (Gdk.ModifierType.SHIFT_MASK, "shift")):
        if state & mask:
            out += " +" + name
    return out


def press(_w, ev):
    name = Gdk.keyval_name(ev.keyval)
    if name.split("_")[0] in MODIFIERS:
        return True  # the modifiers are reported with the key they go with
    if name not in down:
        down[name] = (time.monotonic(), mods(ev.state))
        win.set_title("Keys: down " + name)
    return True


def release(_w, ev):
    name = Gdk.keyval_name(ev.keyval)
    if name.split("_")[0] in MODIFIERS:
        return True
    if name in down:
        t, m = down.pop(name)
        win.set_title("Keys: up %s after %d ms%s" % (name, (time.monotonic() - t) * 1000, m))
    return True


win.connect("key-press-event", press)
win.connect("key-release-event", release)
win.connect("destroy", Gtk.main_quit)
win.show_all()
Gtk.main()
