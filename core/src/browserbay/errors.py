"""One exception class per refusal code, for programs using :mod:`browserbay.api`.

The classes are generated from the closed table :data:`browserbay.refusals.CODES`, so a code
added there has its class here at once: ``ref_stale`` is :class:`RefStale`, ``tab_gone`` is
``TabGone``, ``keeper_unavailable`` is ``KeeperUnavailable`` (also a :class:`ConnectionError`),
``deadline`` is ``Deadline`` (also a :class:`TimeoutError`). All derive from
:class:`BayRefusal`, which carries the refusal's ``code``, ``message``, ``way_out`` and
``data``::

    from browserbay.errors import BayRefusal, RefStale

    try:
        await bay.click("@e12")
    except RefStale:
        await bay.snapshot(interactive=True)
    except BayRefusal as r:
        print(r.code, r.way_out)

(:class:`browserbay.refusals.Refusal` is the other direction: what a plugin raises inside
the keeper. The keeper answers it as a frame, which the client raises as one of these.)
"""

from __future__ import annotations

from typing import Any

from browserbay.refusals import CODES, printable


class BayRefusal(Exception):
    """A typed refusal from the keeper: ``code`` (from :data:`browserbay.refusals.CODES`),
    ``message`` (what happened), ``way_out`` (what to run next) and ``data`` (for machines)."""

    #: The refusal code this class stands for (empty on the base class).
    code_name: str = ""

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        way_out: str = "",
        data: dict[str, Any] | None = None,
    ):
        self.code: str = code or self.code_name
        self.message = message
        self.way_out = way_out
        self.data: dict[str, Any] = dict(data or {})
        # str() is what a traceback prints: a page's control characters stay escaped there.
        text = f"{self.code}: {message}" + (f" (way out: {way_out})" if way_out else "")
        super().__init__(printable(text))

    @classmethod
    def from_frame(cls, frame: dict[str, Any]) -> BayRefusal:
        """The exception for a refusal frame; a code this client does not know (a newer
        keeper's) is raised as the base class with that code."""
        code = str(frame.get("code") or "internal_error")
        data = frame.get("data")
        kind = BY_CODE.get(code, BayRefusal)
        return kind(
            str(frame.get("message") or code),
            code=code,
            way_out=str(frame.get("way_out") or ""),
            data=data if isinstance(data, dict) else {},
        )

    def frame(self) -> dict[str, Any]:
        """The refusal as the keeper sent it."""
        return {
            "ok": False,
            "code": self.code,
            "message": self.message,
            "way_out": self.way_out,
            "data": self.data,
        }


def class_name(code: str) -> str:
    """``ref_stale`` -> ``RefStale``."""
    return "".join(part.capitalize() for part in code.split("_"))


#: Extra built-in bases, so ``except TimeoutError`` and ``except ConnectionError`` work too.
_ALSO = {
    "deadline": (TimeoutError,),
    "wait_timeout": (TimeoutError,),
    "keeper_unavailable": (ConnectionError,),
}

#: code -> its exception class.
BY_CODE: dict[str, type[BayRefusal]] = {}

for _code, _row in CODES.items():
    _cls = type(
        class_name(_code),
        (BayRefusal, *_ALSO.get(_code, ())),
        {
            "code_name": _code,
            "__module__": __name__,
            "__doc__": f"Refusal ``{_code}``: {_row.message}",
        },
    )
    BY_CODE[_code] = _cls
    globals()[_cls.__name__] = _cls


def __getattr__(name: str) -> type[BayRefusal]:
    """Generated classes are module globals; this tells type checkers that
    ``browserbay.errors.RefStale`` and its siblings are :class:`BayRefusal` classes."""
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BY_CODE", "BayRefusal", "class_name", *(c.__name__ for c in BY_CODE.values())]
