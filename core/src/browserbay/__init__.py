"""browserbay: isolated, owned, observable and interruptible browsers for AI agents.

This package is imported by the thin client on its hot path, so it imports nothing here:
the plugin API lives in :mod:`browserbay.hookspecs` (``hookimpl``) and :mod:`browserbay.model`;
the Python API (:class:`browserbay.Client`, :class:`browserbay.SyncClient`, the result types)
and the refusal exceptions (:class:`browserbay.BayRefusal`, ``browserbay.RefStale``…) are
loaded from :mod:`browserbay.api` and :mod:`browserbay.errors` at first use.
"""

from browserbay._version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from browserbay.api import (
        Answer,
        Client,
        Page,
        ProfileInfo,
        SessionInfo,
        Shot,
        ShotLabel,
        Snapshot,
        Status,
        SyncClient,
        Tab,
        Tabs,
        Value,
    )
    from browserbay.errors import BayRefusal

__all__ = [
    "Answer",
    "BayRefusal",
    "Client",
    "Page",
    "ProfileInfo",
    "SessionInfo",
    "Shot",
    "ShotLabel",
    "Snapshot",
    "Status",
    "SyncClient",
    "Tab",
    "Tabs",
    "Value",
    "__version__",
]

_API = frozenset(__all__) - {"BayRefusal", "__version__"}


def __getattr__(name: str) -> object:
    # Only capitalised names: `from browserbay import protocol` asks for a submodule
    # through here first, and must not import anything.
    if name in _API:
        from browserbay import api

        return getattr(api, name)
    if name[:1].isupper():
        from browserbay import errors

        if name == "BayRefusal" or name in errors.__all__:
            return getattr(errors, name)
    raise AttributeError(f"module 'browserbay' has no attribute {name!r}")
