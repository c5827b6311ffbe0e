"""Before/after frames of page actions, for ``bay_action_traced`` (the trace plugin).

Nothing here runs unless some plugin implements the hook. For a traced verb the keeper takes
a JPEG of the tab's viewport just before the action — for a verb with a ``target``, once the
element is found, past the gates and scrolled into view, with its box measured — and one
when the verb has ended. Each frame is bounded in time (:data:`FRAME_TIMEOUT`, and never
more than a quarter of what is left of the verb's deadline); a frame that fails is None with
the reason in ``missing``, and the action goes on. Every text field is masked in a frame
(the pixels of a typed value are a typed value too).

The after-frame is taken off the answer's path: the keeper answers the agent while it is
being taken, and the lease's next verb waits for it first (:func:`settle`), so it always shows
the page as the action left it (a lease's :class:`LeaseTrace` holds it meanwhile). The recorder
of a request travels to :meth:`Keeper.handle`
(which knows the verb's outcome) in :data:`PENDING`, a per-request slot; the hook is called
once both the outcome and the after-frame are in.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import anyio

from browserbay import verbs
from browserbay.model import ActionTrace, Frame, ProfileRef

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page

#: The page verbs that act on the page (they change it, or move the pointer or the view).
TRACED_VERBS = frozenset(
    v.name
    for v in verbs.VERBS
    if v.scope == verbs.PAGE and (v.mutates or v.pointer or v.name == "scroll")
)
#: Of those, the verbs that act through an element: their before-frame waits for it.
ELEMENT_VERBS = frozenset(
    name for name in TRACED_VERBS if any(a.name == "target" for a in verbs.BY_NAME[name].args)
)
#: Of those, the verbs whose trace marks the point they acted at (``Verb.pointer``).
POINTER_VERBS = frozenset(v.name for v in verbs.VERBS if v.pointer)

#: The most one frame may take (seconds).
FRAME_TIMEOUT = 2.0
JPEG_QUALITY = 60
#: Fields whose pixels show what was typed: masked in every frame (the page's iframes and
#: open shadow roots too).
TEXT_FIELDS = (
    "input:not([type=checkbox]):not([type=radio]):not([type=button]):not([type=submit])"
    ":not([type=reset]):not([type=image]):not([type=range]):not([type=color])"
    ":not([type=file]):not([type=hidden]), textarea, [contenteditable]:not([contenteditable=false])"
)
MASK_COLOR = "#6b7280"
_SCROLL_JS = "(el) => el.scrollIntoView({block: 'nearest', inline: 'nearest'})"

PENDING: contextvars.ContextVar[list[Recorder] | None] = contextvars.ContextVar(
    "bay_action_traces", default=None
)
#: After-frames being taken (a reference keeps each task alive until it is done).
_AFTER: set[asyncio.Task[None]] = set()


#: The most a verb waits for the last action's after-frame (seconds; and never more than a
#: tenth of its own time): the wait is on the next verb's clock.
SETTLE_MAX = 1.0


class LeaseTrace:
    """What a lease's last page action left for those who watch it: the after-frame its
    :class:`Recorder` is still taking (written only by that recorder), and where the agent's
    last pointer verb acted (written only by the pointer verbs, for the live view's cursor)."""

    def __init__(self) -> None:
        self._after: Recorder | None = None
        self._point: tuple[str, float, float] | None = None

    @property
    def agent_point(self) -> tuple[str, float, float] | None:
        """(tab, x, y): where the agent's last pointer verb acted (CSS pixels of that tab's
        viewport)."""
        return self._point

    def pointed(self, tab: str, x: float, y: float) -> None:
        self._point = (tab, x, y)

    def taking(self, recorder: Recorder) -> None:
        """``recorder`` takes its after-frame now (see :meth:`Recorder.start_after`)."""
        self._after = recorder

    async def settle(self, deadline: float) -> None:
        """Wait, briefly, for the after-frame of the lease's last action: the next verb must
        not change the page before that frame is taken. A frame not in by then is given up
        (the trace says so) rather than taken of a page the next verb may be changing."""
        recorder = self._after
        if recorder is None or recorder.after_task is None or recorder.after_task.done():
            return
        task = recorder.after_task
        wait = min(SETTLE_MAX, max(0.0, (deadline - time.monotonic()) / 10))
        done, _ = await asyncio.wait({task}, timeout=wait)
        if not done:
            recorder.missing.append("after: given up, the next verb came before it was taken")
            task.cancel()
            await asyncio.wait({task}, timeout=1)


def bare_url(url: str) -> str:
    """An address without its query and fragment (a GET form puts typed text there)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def jpeg_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a JPEG's start-of-frame marker, or None if it is no JPEG."""
    if data[:2] != b"\xff\xd8":
        return None
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        length = int.from_bytes(data[i + 2 : i + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height = int.from_bytes(data[i + 5 : i + 7], "big")
            width = int.from_bytes(data[i + 7 : i + 9], "big")
            return width, height
        i += 2 + length
    return None


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:200]


class Recorder:
    """One action's frames, taken as its verb runs: verb ``verb`` with ``args`` on tab
    ``tab`` (its ``page``) of a lease on ``profile``, due by ``deadline``
    (``time.monotonic()``)."""

    def __init__(
        self,
        verb: str,
        args: Mapping[str, Any],
        profile: ProfileRef,
        tab: str,
        page: Page,
        deadline: float,
        screenshots: bool = True,
    ):
        self.verb = verb
        self.profile = profile
        self.screenshots = screenshots
        self.tab = tab
        self.page = page
        self.deadline = deadline
        self.at = time.time()
        target = args.get("target")
        self.target = str(target) if target is not None and self.verb in ELEMENT_VERBS else None
        self.url = bare_url(page.url)
        self.url_after = self.url
        self.box: tuple[float, float, float, float] | None = None
        self.point: tuple[float, float] | None = None
        self.before: Frame | None = None
        self.after: Frame | None = None
        self.missing: list[str] = []
        self.started = False
        self.after_pending = False
        self.after_task: asyncio.Task[None] | None = None
        self.emit: Callable[[ActionTrace], None] | None = None
        self.emitted = False

    async def take_before(self, loc: Locator | None = None) -> None:
        """The frame just before acting (once). With ``loc``: scroll it into view (as the
        action itself would) and measure its box first."""
        if self.started:
            return
        self.started = True
        if loc is not None:
            try:
                with anyio.fail_after(self._budget()):
                    await loc.evaluate(_SCROLL_JS)
                    box = await loc.bounding_box()
            except Exception as exc:
                box = None
                self.missing.append(f"box: {_reason(exc)}")
            if box is not None:
                self.box = (box["x"], box["y"], box["width"], box["height"])
                if self.verb in POINTER_VERBS:
                    self.point = (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        self.before = await self._frame("before")

    async def take_after(self) -> None:
        if not self.started:
            self.missing.append("before: the action never started")
            return
        self.url_after = bare_url(self.page.url)
        self.after = await self._frame("after", FRAME_TIMEOUT)

    def start_after(self, trace: LeaseTrace) -> None:
        """Take the after-frame in a task of its own (the answer goes out meanwhile); the
        lease's ``trace`` holds it until it is in, for the lease's next verb to wait on."""
        self.after_pending = True

        async def run() -> None:
            try:
                await self.take_after()
            finally:
                self.after_pending = False
                self._maybe_emit()

        task = asyncio.get_running_loop().create_task(run(), name=f"after-frame {self.tab}")
        _AFTER.add(task)
        task.add_done_callback(_AFTER.discard)
        self.after_task = task
        trace.taking(self)

    def outcome_known(self, emit: Callable[[ActionTrace], None]) -> None:
        """The verb's answer is out: ``emit`` the trace now, or once the after-frame is in."""
        self.emit = emit
        self._maybe_emit()

    def _maybe_emit(self) -> None:
        if self.emit is not None and not self.after_pending and not self.emitted:
            self.emitted = True
            self.emit(self.result())

    def _budget(self) -> float:
        return max(0.05, min(FRAME_TIMEOUT, (self.deadline - time.monotonic()) / 4))

    async def _frame(self, which: str, budget: float | None = None) -> Frame | None:
        page = self.page
        if not self.screenshots:
            self.missing.append(f"{which}: the provider takes no screenshots")
            return None
        budget = self._budget() if budget is None else budget
        try:
            with anyio.fail_after(budget):
                jpeg = await page.screenshot(
                    type="jpeg",
                    quality=JPEG_QUALITY,
                    scale="css",
                    animations="allow",
                    caret="initial",
                    mask=[frame.locator(TEXT_FIELDS) for frame in page.frames],
                    mask_color=MASK_COLOR,
                    timeout=budget * 1000,
                )
        except Exception as exc:
            self.missing.append(f"{which}: {_reason(exc)}")
            return None
        size = jpeg_size(jpeg)
        if size is None:
            self.missing.append(f"{which}: the browser answered no JPEG")
            return None
        return Frame(jpeg, size[0], size[1])

    def result(self) -> ActionTrace:
        noted = {m.split(":", 1)[0] for m in self.missing}
        if self.started and self.after is None and "after" not in noted:  # cut mid-verb
            self.missing.append("after: the verb was cut (its deadline, or a human took over)")
        return ActionTrace(
            verb=self.verb,
            tab=self.tab,
            at=self.at,
            target=self.target,
            url=self.url,
            url_after=self.url_after,
            box=self.box,
            point=self.point,
            before=self.before,
            after=self.after,
            missing=tuple(self.missing),
        )
