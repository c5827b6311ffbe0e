"""One page verb's call as its handler sees it (:class:`Act`): the lease and tab it acts on,
its arguments, its deadline, and the recorder of its frames when actions are traced.

It sits below the page verbs (browserbay.keeper.pageverbs) and the gate they ask before
touching an element (browserbay.keeper.actions), which both read it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from browserbay.keeper.approvals import Approvals
from browserbay.keeper.downloads import Downloads
from browserbay.keeper.emulated import Device
from browserbay.keeper.files import Carried
from browserbay.keeper.frames import Recorder
from browserbay.keeper.recorder import Recordings
from browserbay.keeper.sessions import Lease, Tab
from browserbay.plugins import Plugins
from browserbay.refusals import Refusal

if TYPE_CHECKING:
    from playwright.async_api import Frame, Page


@dataclass
class Act:
    verb: str
    args: dict[str, Any]
    lease: Lease
    tab: Tab
    deadline: float  # time.monotonic() by which the verb must be done
    plugins: Plugins
    shots_dir: Path
    files: Carried
    """The files its connection sent (``take``) and the ones its answer offers (``offer_*``):
    a file of the caller's moves through the connection, never by its path
    (:mod:`browserbay.keeper.files`)."""
    downloads: Downloads | None = None
    """The sessions' downloads (None: a keeper that keeps none)."""
    devices: Callable[[], Awaitable[Mapping[str, Device]]] | None = None
    """Playwright's device descriptors by name (``bay set device``; None: none known)."""
    trace: Recorder | None = None
    """Takes the action's frames when a plugin traces actions (bay_action_traced)."""
    road: str = "api"
    """The road the verb came by (:attr:`browserbay.model.VerbCall.road`)."""
    actor: str | None = None
    """Who acted, named by the keeper from the channel (:attr:`VerbCall.actor`)."""
    approvals: Approvals | None = None
    """Where an approval gate's Ask waits for a human (None: no human can answer; refused)."""
    recordings: Recordings | None = None
    """The keeper's recordings (``bay record``; None: a keeper that keeps none)."""
    notify: Callable[[str], None] | None = None
    """Says a notice with the session's next answer (a recording that stopped by itself)."""
    let_go: Callable[[], AbstractAsyncContextManager[None]] | None = None
    """Lets go of the session's lock while the verb waits for a human's approval (the human's
    ``bay live`` link and ``bay status`` are not held up meanwhile; the session's page verbs
    wait behind it: browserbay.keeper.approvals.behind_asking)."""

    @property
    def page(self) -> Page:
        return self.tab.page

    @property
    def scope(self) -> Page | Frame:
        """Where targets resolve and the page is read: the iframe the tab acts inside
        (``bay frame``), else the page. A frame that went away is ``frame_gone``, never a
        silent fall back to the main frame."""
        focus = self.tab.focus
        if focus is None:
            return self.tab.page
        if focus.gone:
            raise Refusal("frame_gone", tab=self.tab.id, frame=focus.target)
        return focus.frame

    def ms_left(self, margin: float = 0.25) -> float:
        """Playwright's own timeout: a little under our deadline, so its precise error
        (target missing, not enabled…) wins over the generic deadline."""
        return max(50.0, (self.deadline - time.monotonic() - margin) * 1000)
