#!/usr/bin/python3
# A GTK 3 colour chooser (a palette of swatches, as paint programs show
# it): its title names the colour chosen ("Swatches: rgb(...)").
import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

win = Gtk.Window(title="Swatches: none")
chooser = Gtk.ColorChooserWidget(show_editor=False)
chooser.connect("notify::rgba", lambda c, _p: win.set_title("Swatches: " + c.get_rgba().to_string()))
win.add(chooser)
win.connect("destroy", Gtk.main_quit)
win.show_all()
Gtk.main()
