"""The memory line's hysteresis (browserbay.keeper.memory.judge): told once as a browser
crosses the line, re-armed only below the lower line."""

from __future__ import annotations

from browserbay.keeper.memory import judge

LINE = 1000


def test_told_once_over_the_line_and_rearmed_only_below_the_lower_line() -> None:
    marked, said = False, 0
    for pss in (900, 1001, 1200, 990, 850, 1100, 790, 1001):
        marked, tell = judge(marked, pss, LINE)
        said += tell
        if pss == 1100:
            assert marked  # 850 is above 80 % of the line: still marked
            assert said == 1  # and not said again
    assert said == 2  # crossed at 1001; re-armed at 790; crossed again at 1001
    assert judge(False, 10**9, 0) == (False, False)  # no line: never marked
