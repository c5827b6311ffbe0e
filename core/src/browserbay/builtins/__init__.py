"""Plugins that ship inside the core. They register through the same hooks as any other."""
