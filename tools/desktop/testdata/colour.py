#!/usr/bin/python3
# A GTK 3 window filled with one colour, for the repaint test:
#   colour.py TITLE RED GREEN BLUE [DELAY_MS]
# DELAY_MS makes every repaint that late, as a busy application's is.
import sys
import time

import gi

gi.require_version("Gtk", "3.0")
# The draw handler gets a cairo context only with python3-gi-cairo: without
# it every repaint fails and the window shows GTK's background, not its
# colour. Fail at once instead, saying so.
gi.require_foreign("cairo")
from gi.repository import Gtk  # noqa: E402

title, r, g, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
delay = int(sys.argv[5]) / 1000 if len(sys.argv) > 5 else 0


def draw(_widget, cr):
    if delay:
        time.sleep(delay)
    cr.set_source_rgb(r / 255, g / 255, b / 255)
    cr.paint()
    return True


win = Gtk.Window(title=title)
win.set_default_size(400, 300)
win.move(0, 0)
area = Gtk.DrawingArea()
area.connect("draw", draw)
win.add(area)
win.connect("destroy", Gtk.main_quit)
win.show_all()
Gtk.main()
