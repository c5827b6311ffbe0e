"""What a page's pointer and keyboard hold between verbs (:class:`PageInput`), per page.

Below the page verbs (:mod:`browserbay.keeper.pageverbs`, whose ``click`` presses with the
held modifiers) and the input verbs (:mod:`browserbay.keeper.inputs`, which write it), so both
read it without importing each other.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.async_api import Page

#: CDP's ``modifiers`` bit of each modifier key (Input.dispatchMouseEvent).
MODIFIER_BITS = {"Alt": 1, "Control": 2, "Meta": 4, "Shift": 8}


@dataclass
class PageInput:
    """What a page's pointer and keyboard hold between verbs."""

    point: tuple[float, float] | None = None
    """Where the last ``mouse move`` (or ``drag``) left the pointer, in CSS pixels."""
    held: list[str] = field(default_factory=list)
    """The keys ``keydown`` holds, in the order they went down."""

    def modifiers(self) -> int:
        """The held modifier keys as CDP's ``modifiers`` bits (0: none held)."""
        return sum(MODIFIER_BITS.get(key, 0) for key in set(self.held))


_INPUTS: weakref.WeakKeyDictionary[Page, PageInput] = weakref.WeakKeyDictionary()


def page_input(page: Page) -> PageInput:
    """The page's :class:`PageInput` (made on first use, gone with the page)."""
    state = _INPUTS.get(page)
    if state is None:
        state = _INPUTS[page] = PageInput()
    return state
