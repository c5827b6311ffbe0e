"""A GTK3 window for bench/window_live.py, run with Debian's /usr/bin/python3 (widgets and
CSS only: no cairo bindings needed): WIDTHxHEIGHT of coloured background with a line of
text, that either animates (``animate``: the text — a moving block and a counter — changes
~60 times a second) or stays still and swaps its colours on each mouse press (``click``).

    /usr/bin/python3 bench/gtk_paint.py animate|click [WIDTH HEIGHT]
"""

import sys

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("Gdk", "3.0")
from gi.repository import Gdk, GLib, Gtk  # noqa: E402

CSS = b"""
.a { background-color: #1a33e6; color: white; font-size: 28px; }
.b { background-color: #e6331a; color: black; font-size: 28px; }
"""


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "click"
    width, height = (int(v) for v in sys.argv[2:4]) if len(sys.argv) > 3 else (400, 300)
    provider = Gtk.CssProvider()
    provider.load_from_data(CSS)
    Gtk.StyleContext.add_provider_for_screen(
        Gdk.Screen.get_default(), provider, Gtk.STYLE_PROVIDER_PRIORITY_APPLICATION
    )
    win = Gtk.Window(title=f"Bay bench {mode}")
    win.set_default_size(width, height)
    box = Gtk.EventBox()
    label = Gtk.Label(label="still")
    box.add(label)
    style = box.get_style_context()
    style.add_class("a")
    state = {"tick": 0, "presses": 0}

    def tick() -> bool:
        state["tick"] += 1
        n = state["tick"]
        label.set_text(" " * (n % 30) + "█" + " " * (30 - n % 30) + f"{n:06d}")
        return True

    def press(_widget: Gtk.Widget, event: Gdk.EventButton) -> bool:
        if event.type != Gdk.EventType.BUTTON_PRESS:
            return True  # the double-click GTK adds to a quick second press: no swap back
        state["presses"] += 1
        old, new = ("a", "b") if state["presses"] % 2 else ("b", "a")
        style.remove_class(old)
        style.add_class(new)
        return True

    box.connect("button-press-event", press)
    if mode == "animate":
        GLib.timeout_add(16, tick)
    win.add(box)
    win.connect("destroy", Gtk.main_quit)
    win.show_all()
    Gtk.main()


if __name__ == "__main__":
    main()
