#!/usr/bin/python3
# A GTK 3 canvas with no accessible controls, for the pixel tests:
#   pointer.py TITLE [WIDTH HEIGHT]
# It paints white, with one red pixel where a button last went down and
# one blue pixel where it last came up, so that a screenshot shows which
# pixel the pointer reached. Its title says what it felt, e.g.
#   "TITLE: press 1 x2 at 40,20 +ctrl, release 1, moves 12, scroll 0,3, hover 40,20"
# (the last button pressed, how many clicks in a row, where and with
# which modifiers held, the last
# released, motions with a button held, wheel notches right and down, and
# where the pointer last hovered, in the canvas's pixels).
import sys

import gi

gi.require_version("Gtk", "3.0")
gi.require_foreign("cairo")
from gi.repository import Gdk, Gtk  # noqa: E402

title = sys.argv[1]
width, height = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (400, 300)
state = {"press": None, "clicks": 0, "at": (0, 0), "mods": "", "release": None, "moves": 0, "dx": 0, "dy": 0, "hover": None}
dots = {}


def retitle():
    parts = []
    if state["press"] is not None:
        parts.append("press %d x%d at %d,%d%s" % ((state["press"], state["clicks"]) + state["at"] + (state["mods"],)))
    if state["release"] is not None:
        parts.append("release %d" % state["release"])
    parts.append("moves %d" % state["moves"])
    parts.append("scroll %d,%d" % (state["dx"], state["dy"]))
    if state["hover"] is not None:
        parts.append("hover %d,%d" % state["hover"])
    win.set_title(title + ": " + ", ".join(parts))


def draw(_widget, cr):
    cr.set_source_rgb(1, 1, 1)
    cr.paint()
    for colour, (x, y) in dots.items():
        cr.set_source_rgb(*colour)
        cr.rectangle(x, y, 1, 1)
        cr.fill()
    return True


def pressed(widget, ev):
    clicks = {Gdk.EventType.BUTTON_PRESS: 1, Gdk.EventType._2BUTTON_PRESS: 2, Gdk.EventType._3BUTTON_PRESS: 3}.get(ev.type, 0)
    state["press"], state["clicks"], state["at"] = ev.button, clicks, (int(ev.x), int(ev.y))
    state["mods"] = "".join(" +" + name for mask, name in ((Gdk.ModifierType.CONTROL_MASK, "ctrl"),
                                                          (Gdk.ModifierType.SHIFT_MASK, "shift"),
                                                          (Gdk.ModifierType.MOD1_MASK, "alt")) if ev.state & mask)
    if clicks == 1:
        state["moves"] = 0
        dots[(1, 0, 0)] = (int(ev.x), int(ev.y))
    widget.queue_draw()
    retitle()
    return True


def released(widget, ev):
    state["release"] = ev.button
    dots[(0, 0, 1)] = (int(ev.x), int(ev.y))
    widget.queue_draw()
    retitle()
    return True


def moved(_widget, ev):
    if ev.state & (Gdk.ModifierType.BUTTON1_MASK | Gdk.ModifierType.BUTTON2_MASK | Gdk.ModifierType.BUTTON3_MASK):
        state["moves"] += 1
    else:
        state["hover"] = (int(ev.x), int(ev.y))
    retitle()
    return True


def scrolled(_widget, ev):
    step = {Gdk.ScrollDirection.UP: (0, -1), Gdk.ScrollDirection.DOWN: (0, 1),
            Gdk.ScrollDirection.LEFT: (-1, 0), Gdk.ScrollDirection.RIGHT: (1, 0)}.get(ev.direction, (0, 0))
    state["dx"] += step[0]
    state["dy"] += step[1]
    retitle()
    return True


win = Gtk.Window(title=title)
win.set_default_size(width, height)
area = Gtk.DrawingArea()
area.set_events(Gdk.EventMask.BUTTON_PRESS_MASK | Gdk.EventMask.BUTTON_RELEASE_MASK
                | Gdk.EventMask.POINTER_MOTION_MASK | Gdk.EventMask.SCROLL_MASK)
area.connect("draw", draw)
area.connect("button-press-event", pressed)
area.connect("button-release-event", released)
area.connect("motion-notify-event", moved)
area.connect("scroll-event", scrolled)
win.add(area)
win.connect("destroy", Gtk.main_quit)
win.show_all()
Gtk.main()
