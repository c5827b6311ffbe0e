"""A tiny GTK3 app for the local-window tests, run with Debian's /usr/bin/python3 (python3-gi,
gir1.2-gtk-3.0). An entry, a button that greets whoever the entry names, a label that shows
it, and Ctrl+S, which the label answers with "Saved"."""

import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gdk, Gtk  # noqa: E402


def main() -> None:
    win = Gtk.Window(title=sys.argv[1] if len(sys.argv) > 1 else "Bay test app")
    win.set_default_size(400, 200)
    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6)
    entry = Gtk.Entry()
    entry.get_accessible().set_name("Your name")
    button = Gtk.Button(label="Greet")
    label = Gtk.Label(label="Nobody greeted yet")

    def greet(_button: Gtk.Button) -> None:
        label.set_text(f"Hello, {entry.get_text()}!")

    def key(_win: Gtk.Window, event: Gdk.EventKey) -> bool:
        ctrl = event.state & Gdk.ModifierType.CONTROL_MASK
        if ctrl and Gdk.keyval_name(event.keyval) == "s":
            label.set_text("Saved")
            return True
        return False

    button.connect("clicked", greet)
    win.connect("key-press-event", key)
    for widget in (entry, button, label):
        box.pack_start(widget, False, False, 0)
    win.add(box)
    win.connect("destroy", Gtk.main_quit)
    win.show_all()
    Gtk.main()


if __name__ == "__main__":
    main()
