#!/usr/bin/python3
# A GTK 3 window for the computer-use test: one big button that fills a
# 400x300 window at the screen's top left. Each press counts in the
# window's title: "TITLE: pressed N".
#   button.py TITLE
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

title = sys.argv[1]
count = [0]
win = Gtk.Window(title=title)
win.set_default_size(400, 300)
win.move(0, 0)
button = Gtk.Button(label="Press me")


def pressed(_button):
    count[0] += 1
    win.set_title("%s: pressed %d" % (title, count[0]))


button.connect("clicked", pressed)
win.add(button)
win.connect("destroy", Gtk.main_quit)
win.show_all()
Gtk.main()
