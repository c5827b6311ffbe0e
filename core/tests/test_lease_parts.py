"""Each part of a lease has one writer (browserbay.keeper.sessions says which): its writing
methods are called from that service's module only. mypy refuses a direct assignment to the
read-only views on Lease; this test refuses a second writer calling a part's methods."""

from __future__ import annotations

import re
from pathlib import Path

import browserbay.keeper

KEEPER = Path(browserbay.keeper.__file__).parent

#: A part's writing call, and the one module that may make it.
WRITERS = {
    r"\.binding\.(rebind|fence|bind|unbind|kept|started_with|set_restoring)\(": "leases.py",
    r"\blease\.tabs\.(put|pop|select)\(": "sessions.py",
    r"\.control\.(hold|release|track|untrack)\(": "controls.py",
    r"\.trace\.pointed\(": "pageverbs.py",
    r"\btrace\.taking\(": "frames.py",
    r"\.refused\(\)": "guard.py",
}


def test_every_part_of_a_lease_is_written_by_its_owner_only() -> None:
    calls: dict[str, set[str]] = {pattern: set() for pattern in WRITERS}
    for path in sorted(KEEPER.glob("*.py")):
        text = path.read_text()
        for pattern in WRITERS:
            if re.search(pattern, text):
                calls[pattern].add(path.name)
    for pattern, owner in WRITERS.items():
        assert calls[pattern] == {owner}, (pattern, sorted(calls[pattern]))


def test_the_check_sees_a_second_writer() -> None:
    """The negative control: a write from another module is seen by the same pattern."""
    elsewhere = "lease.binding.unbind()\nlease.control.release()\n"
    assert re.search(next(iter(WRITERS)), elsewhere)
    assert any(re.search(p, elsewhere) for p, owner in WRITERS.items() if owner == "controls.py")
