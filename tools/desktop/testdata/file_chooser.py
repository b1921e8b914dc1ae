#!/usr/bin/python3
# A GTK 3 file chooser (Open) on a folder, argv[1].
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

dlg = Gtk.FileChooserDialog(title="Open a file", action=Gtk.FileChooserAction.OPEN)
dlg.add_buttons("_Cancel", Gtk.ResponseType.CANCEL, "_Open", Gtk.ResponseType.ACCEPT)
if len(sys.argv) > 1:
    dlg.set_current_folder(sys.argv[1])
dlg.set_default_size(800, 600)
dlg.connect("response", lambda *_: Gtk.main_quit())
dlg.show_all()
Gtk.main()
