"""browserbay-local-window: the tier-3 ``local-window`` provider (native windows through AT-SPI
and X11) and its ``bay window`` verb."""
