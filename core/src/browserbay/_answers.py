"""The Python API's answers: :class:`Answer` and its subclasses with typed accessors, built
from the keeper's frames; a refusal frame is raised as the exception class of its code
(:mod:`browserbay.errors`). Both clients (:mod:`browserbay.api`) return these; the public
names are :mod:`browserbay.api`'s."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from browserbay import identity, render
from browserbay.errors import BayRefusal
from browserbay.refusals import Refusal


@dataclass(frozen=True)
class SessionInfo:
    id: str
    origin: str

    @classmethod
    def from_row(cls, row: Any) -> SessionInfo:
        row = row if isinstance(row, dict) else {}
        return cls(str(row.get("id", "")), str(row.get("origin", "")))


@dataclass(frozen=True)
class ProfileInfo:
    """The profile a verb acted on (``ephemeral``: the session's own isolated browser).
    ``row`` keeps every field the keeper sent, including ones newer than this client."""

    id: str
    label: str
    provider: str
    tier: int
    ephemeral: bool
    attached: int = 1
    among: int = 0
    """How many profiles the session had attached when this one was chosen."""
    changed: bool = False
    """Another profile than the session's previous answer acted on."""
    row: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_row(cls, row: Any) -> ProfileInfo | None:
        if not isinstance(row, dict):
            return None
        return cls(
            id=str(row.get("id", "")),
            label=str(row.get("label", "")),
            provider=str(row.get("provider", "")),
            tier=int(row.get("tier") or 0),
            ephemeral=bool(row.get("ephemeral")),
            attached=int(row.get("attached") or 1),
            among=int(row.get("among") or 0),
            changed=bool(row.get("changed")),
            row=dict(row),
        )


@dataclass(frozen=True)
class Answer:
    """One verb's answer: what it did (``data``, as ``bay --json`` prints it; ``text``, as
    ``bay`` prints it), for which session, on which profile (None for the keeper's own
    verbs), plus a one-time ``notice`` when there is one."""

    verb: str
    session: SessionInfo
    profile: ProfileInfo | None
    data: dict[str, Any]
    text: str = ""
    notice: str | None = None

    @classmethod
    def from_frame(cls: type[A], frame: dict[str, Any]) -> A:
        data = frame.get("data")
        return cls(
            verb=str(frame.get("verb", "")),
            session=SessionInfo.from_row(frame.get("session")),
            profile=ProfileInfo.from_row(frame.get("profile")),
            data=data if isinstance(data, dict) else {},
            text=str(frame.get("text") or ""),
            notice=frame.get("notice"),
        )

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    @property
    def footer(self) -> str:
        """The footer ``bay`` prints under this answer: the profile, when the agent could
        have it wrong (two or more attached, or it just changed), else ``""``
        (:func:`browserbay.render.footer`)."""
        return render.footer(self.profile.row if self.profile else None)

    @property
    def full_footer(self) -> str:
        """The whole line ``BAY_FOOTER=full`` prints: profile, provider, how it was chosen,
        the session and where its identity came from (:func:`browserbay.render.full_footer`)."""
        session = {"id": self.session.id, "origin": self.session.origin}
        return render.full_footer(self.profile.row if self.profile else None, session)

    @property
    def plain(self) -> str:
        """The answer as one text with no footer: the value, then its notice and hint
        lines (:func:`browserbay.render.plain`) — what the MCP server shows."""
        return render.plain({"text": self.text, "notice": self.notice, "data": self.data})


A = TypeVar("A", bound=Answer)


class Page(Answer):
    """After ``open``, ``back``, ``forward``, ``reload``, ``new_tab`` and ``switch_tab``."""

    @property
    def url(self) -> str:
        return str(self.data.get("url", ""))

    @property
    def title(self) -> str:
        return str(self.data.get("title", ""))

    @property
    def tab(self) -> str:
        return str(self.data.get("tab") or self.data.get("id") or "")

    @property
    def status(self) -> int | None:
        """The HTTP status of the navigation, when there was one."""
        value = self.data.get("status")
        return int(value) if isinstance(value, int) else None

    @property
    def hint(self) -> str | None:
        """A tier hint (worded as a hint, never a detection), when a plugin gave one."""
        value = self.data.get("hint")
        return str(value) if value else None


class Snapshot(Answer):
    """The page's ARIA tree with ``@eN`` references to act on."""

    @property
    def tree(self) -> str:
        return str(self.data.get("snapshot", ""))

    @property
    def refs(self) -> int:
        return int(self.data.get("refs") or 0)

    @property
    def url(self) -> str:
        return str(self.data.get("url", ""))

    @property
    def tab(self) -> str:
        return str(self.data.get("tab", ""))


class Value(Answer):
    """After ``get``, ``is``, ``find`` and ``eval``: ``value`` is what ``get`` read (a
    title, text, count, box, attribute, styles…), ``is``'s True or False, the text ``find
    … text`` read, or the script's JSON value."""

    @property
    def value(self) -> Any:
        return self.data.get("value")


@dataclass(frozen=True)
class ShotLabel:
    """One label of ``screenshot(annotate=True)``: ``label`` is drawn at ``box`` (x, y,
    width, height in image pixels) on the element whose ref is ``ref`` (act on ``"@" + ref``)."""

    label: str
    ref: str
    role: str
    name: str
    box: tuple[int, int, int, int]
    kind: str = ""
    """``clickable``/``editable``/``focusable`` for an element judged from the DOM, else ``""``."""

    @classmethod
    def from_row(cls, row: Any) -> ShotLabel:
        row = row if isinstance(row, dict) else {}
        box = [int(v) for v in (row.get("box") or [0, 0, 0, 0])][:4]
        x, y, w, h = [*box, 0, 0, 0, 0][:4]
        return cls(
            str(row.get("label", "")),
            str(row.get("ref", "")),
            str(row.get("role", "")),
            str(row.get("name", "")),
            (x, y, w, h),
            str(row.get("kind") or ""),
        )


class Shot(Answer):
    """After ``screenshot``: where the picture was written, its ``mime`` (``image/png`` or
    ``image/jpeg``), size and ``scale`` (image pixels per CSS pixel: divide a point of the
    picture by it to act there); ``unchanged`` when ``if_changed`` found it the tab's last
    picture again (nothing written); ``labels`` with ``annotate``."""

    @property
    def path(self) -> Path:
        return Path(str(self.data.get("path", "")))

    @property
    def bytes(self) -> int:
        return int(self.data.get("bytes") or 0)

    @property
    def mime(self) -> str:
        return str(self.data.get("mime", ""))

    @property
    def width(self) -> int:
        return int(self.data.get("width") or 0)

    @property
    def height(self) -> int:
        return int(self.data.get("height") or 0)

    @property
    def scale(self) -> float:
        return float(self.data.get("scale") or 1.0)

    @property
    def unchanged(self) -> bool:
        return bool(self.data.get("unchanged"))

    @property
    def labels(self) -> list[ShotLabel]:
        return [ShotLabel.from_row(r) for r in self.data.get("labels") or []]


@dataclass(frozen=True)
class Tab:
    id: str
    url: str
    title: str
    current: bool
    opener: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Tab:
        return cls(
            id=str(row.get("id", "")),
            url=str(row.get("url", "")),
            title=str(row.get("title", "")),
            current=bool(row.get("current")),
            opener=row.get("opener"),
        )


class Tabs(Answer):
    """The session's own tabs (``current`` marks the one verbs act on)."""

    @property
    def tabs(self) -> list[Tab]:
        return [Tab.from_row(r) for r in self.data.get("tabs") or () if isinstance(r, dict)]

    @property
    def current(self) -> Tab | None:
        return next((t for t in self.tabs if t.current), None)


class Status(Tabs):
    """The session, the profile it acts on, that profile's browser (None until the first
    page verb) and its tabs. ``data`` has the whole picture (every lease, when the session
    has several profiles attached)."""

    @property
    def browser(self) -> str | None:
        value = self.data.get("browser")
        return str(value) if value else None

    @property
    def tabs(self) -> list[Tab]:
        rows = self.data.get("tabs")
        if rows is None:  # one row per lease: the tabs of the one this answer acted on
            leases = [x for x in self.data.get("leases") or () if isinstance(x, dict)]
            mine = self.profile.id if self.profile else None
            chosen = [x for x in leases if (x.get("profile") or {}).get("id") == mine]
            rows = [r for x in chosen or leases for r in x.get("tabs") or ()]
        return [Tab.from_row(r) for r in rows if isinstance(r, dict)]


def api_session(session: str | None = None) -> dict[str, str]:
    """The identity a program acts as: ``session``, else ``BAY_SESSION``, else the calling
    shell's session; origin ``api`` either way."""
    return identity.resolve(session, origin="api")


def answer(frame: dict[str, Any], kind: type[A]) -> A:
    """The answer ``frame`` carries, as ``kind``; a refusal frame raised."""
    if frame.get("ok"):
        return kind.from_frame(frame)
    raise BayRefusal.from_frame(frame)


def refused(refusal: Refusal) -> BayRefusal:
    """A refusal the client itself makes, as the exception the keeper's would raise."""
    return BayRefusal.from_frame(refusal.frame())
