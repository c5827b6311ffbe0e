"""A GTK3 app with many widgets (rows of label, button, check box) for the node budget test
and the walk benchmark (bench/window_walk.py). Run with /usr/bin/python3: gtk_big_app.py N."""

import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    win = Gtk.Window(title=f"Bay bench app ({rows} rows)")
    win.set_default_size(800, 600)
    scrolled = Gtk.ScrolledWindow()
    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
    for i in range(rows):
        row = Gtk.Box()
        row.pack_start(Gtk.Label(label=f"Row {i}"), False, False, 0)
        row.pack_start(Gtk.Button(label=f"Button {i}"), False, False, 0)
        row.pack_start(Gtk.CheckButton(label=f"Check {i}"), False, False, 0)
        box.pack_start(row, False, False, 0)
    scrolled.add(box)
    win.add(scrolled)
    win.connect("destroy", Gtk.main_quit)
    win.show_all()
    Gtk.main()


if __name__ == "__main__":
    main()
