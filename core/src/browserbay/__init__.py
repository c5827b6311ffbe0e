"""browserbay: isolated, owned, observable and interruptible browsers for AI agents.

This package is imported by the thin client on its hot path, so it imports nothing here:
the plugin API lives in :mod:`browserbay.hookspecs` (``hookimpl``) and :mod:`browserbay.model`.
"""

from browserbay._version import __version__

__all__ = ["__version__"]
