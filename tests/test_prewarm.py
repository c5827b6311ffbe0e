"""Each document's injected scripts are built in the background (browserbay.keeper.prewarm),
never while the verb that loaded it still runs, and a page that fails them is no error. (That
it saves time is measured in bench/, never asserted here.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import anyio

from browserbay.keeper.prewarm import UTILITY_PROBE, Prewarm

MAIN_PROBE = "bay-ref=:warm"


class FakeLocator:
    def __init__(self, page: FakePage, selector: str) -> None:
        self.page, self.selector = page, selector

    async def count(self) -> int:
        if self.page.broken:
            raise RuntimeError("Target page, context or browser has been closed")
        self.page.counted.append(self.selector)
        return 0


class FakePage:
    """What Prewarm uses of a Playwright page: ``on`` and ``locator(...).count()``."""

    def __init__(self, broken: bool = False) -> None:
        self.broken = broken
        self.handlers: dict[str, Callable[[Any], None]] = {}
        self.counted: list[str] = []

    def on(self, event: str, handler: Callable[[Any], None]) -> None:
        self.handlers[event] = handler

    def locator(self, selector: str) -> FakeLocator:
        return FakeLocator(self, selector)

    def load(self) -> None:
        self.handlers["load"](self)


def test_a_loaded_document_is_warmed_in_both_worlds_once_its_verb_has_ended() -> None:
    async def go() -> None:
        page, busy = FakePage(), anyio.Lock()
        Prewarm(MAIN_PROBE).watch(cast(Any, page), busy)
        async with busy:  # the verb that navigated still runs
            page.load()
            await anyio.sleep(0.05)
            assert page.counted == []
        await anyio.sleep(0.05)
        assert sorted(page.counted) == sorted([UTILITY_PROBE, MAIN_PROBE])
        page.load()  # the next document: again
        await anyio.sleep(0.05)
        assert len(page.counted) == 4

    anyio.run(go)


def test_a_page_that_fails_the_warm_up_is_no_error() -> None:
    async def go() -> None:
        page = FakePage(broken=True)
        await Prewarm(MAIN_PROBE).warm(cast(Any, page))  # raises nothing
        Prewarm(MAIN_PROBE).watch(cast(Any, page), anyio.Lock())
        page.load()
        await anyio.sleep(0.05)
        assert page.counted == []

    anyio.run(go)
