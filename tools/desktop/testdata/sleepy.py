#!/usr/bin/python3
# A GTK 3 window whose main loop sleeps when signalled, as an application
# waiting on a slow peer (or deadlocked) does: it answers nothing and uses
# no processor meanwhile.
#   sleepy.py MARKER
# SIGUSR1: sleep 1.5 s; SIGUSR2: sleep 5 minutes; SIGHUP: work (use the
# processor) for 15 s, as an application opening a large document does.
# Before sleeping or working it writes "asleep" to MARKER (a pipe the test
# reads).
import signal
import sys
import time

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk  # noqa: E402

marker = sys.argv[1]


def sleep(seconds):
    def handler():
        with open(marker, "w") as f:
            f.write("asleep\n")
        time.sleep(seconds)
        return True

    return handler


win = Gtk.Window(title="Sleepy")
win.set_default_size(300, 200)
win.add(Gtk.Button(label="Hello"))
win.connect("destroy", Gtk.main_quit)
GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGUSR1, sleep(1.5))
GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGUSR2, sleep(300))


def work(seconds):
    def handler():
        with open(marker, "w") as f:
            f.write("asleep\n")
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pass
        return True

    return handler


GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGHUP, work(15))
win.show_all()
Gtk.main()
