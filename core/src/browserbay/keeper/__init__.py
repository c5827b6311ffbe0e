"""The keeper daemon: the only process that launches browsers and writes the registry."""
