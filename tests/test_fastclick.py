"""The click fast path itself (browserbay.keeper.fastclick), on a real Chromium page: when it
applies (a ready element in the main frame) and when it steps aside for Playwright's click."""

from __future__ import annotations

import asyncio
from typing import Any

from browserbay.keeper import fastclick

CHROMIUM = "/usr/lib/chromium/chromium"

PAGE = """<!doctype html><title>fast</title>
<button id=b onclick="document.getElementById('out').textContent = 'pressed'">Press</button>
<p id=out>not yet</p>
<button id=off disabled>Off</button>
<button id=under>Under</button>
<div style="position:absolute;left:0;top:0;width:100%;height:100%;pointer-events:none"></div>
<div id=cover style="position:fixed;left:0;bottom:0;width:200px;height:60px;z-index:9"></div>
<div style="height:3000px"></div>
<a id=go href="#later" style="margin-left:500px">Go</a>
<iframe srcdoc="<button id=inner>Inside</button>"></iframe>"""


def _run(check: Any, *, engine: bool = False) -> Any:
    from playwright.async_api import async_playwright

    async def go() -> Any:
        async with async_playwright() as p:
            if engine:  # as the keeper's driver registers it
                await p.selectors.register(
                    fastclick.READY_ENGINE, fastclick.READY_ENGINE_JS, content_script=True
                )
            browser = await p.chromium.launch(executable_path=CHROMIUM)
            try:
                page = await browser.new_page(viewport={"width": 800, "height": 600})
                await page.set_content(PAGE)
                await page.frames[1].wait_for_selector("#inner")
                # Put #under beneath the cover at the bottom of the viewport.
                await page.evaluate(
                    "() => { const u = document.getElementById('under');"
                    " u.style = 'position:fixed;left:10px;bottom:10px'; }"
                )
                return await check(page)
            finally:
                await browser.close()

    return asyncio.run(go())


def test_ready_point_only_for_an_element_ready_in_the_main_frame() -> None:
    async def check(page: Any) -> dict[str, Any]:
        return {
            name: await fastclick.ready_point(page, sel)
            for name, sel in [
                ("ready", "#b"),
                ("disabled", "#off"),
                ("covered", "#under"),
                ("missing", "#nope"),
                ("frame", "iframe >> internal:control=enter-frame >> #inner"),
                ("below the fold", "#go"),
            ]
        }

    points = _run(check)
    assert points["ready"] is not None, points
    assert points["ready"][0] > 0, points
    assert points["below the fold"] is not None, points  # scrolled into view first
    assert 0 < points["below the fold"][1] < 600, points
    for name in ("disabled", "covered", "missing", "frame"):
        assert points[name] is None, (name, points)


def test_click_fast_presses_the_element_and_waits_for_its_navigation() -> None:
    async def check(page: Any) -> tuple[str, str, bool, str]:
        before = await page.inner_text("#out")
        point = await fastclick.ready_point(page, "#b")
        assert point is not None
        assert await fastclick.click_fast(page, point, 10.0)
        after = await page.inner_text("#out")
        link = await fastclick.ready_point(page, "#go")
        assert link is not None
        await fastclick.click_fast(page, link, 10.0)
        # The same session serves the next click (one per page).
        cached = fastclick._POINTERS.get(page) is await fastclick.pointer_of(page)
        return before, after, cached, page.url

    before, after, cached, url = _run(check)
    assert (before, after) == ("not yet", "pressed")
    assert cached
    assert url.endswith("#later"), url


def test_a_ref_is_kept_from_its_second_click_and_dropped_when_not_ready() -> None:
    async def check(page: Any) -> dict[str, Any]:
        snap = await page.aria_snapshot(mode="ai")
        (line,) = [x for x in snap.splitlines() if 'button "Press"' in x]
        sel = "aria-ref=" + line.split("[ref=")[1].split("]")[0]  # Playwright's own text
        out: dict[str, Any] = {}
        out["first"] = await fastclick.ready_point(page, sel, ref=True)
        kept = fastclick._HANDLES[page].handles
        out["kept after first"] = sel in kept
        out["second"] = await fastclick.ready_point(page, sel, ref=True)
        out["kept after second"] = sel in kept
        out["third"] = await fastclick.ready_point(page, sel, ref=True)
        await page.evaluate("document.getElementById('b').disabled = true")
        out["disabled"] = await fastclick.ready_point(page, sel, ref=True)
        out["kept when disabled"] = sel in kept
        # A CSS selector is never kept: it may match another element next time.
        for _ in range(3):
            await fastclick.ready_point(page, "#go", ref=False)
        out["css kept"] = "#go" in kept
        return out

    out = _run(check)
    assert out["first"] is not None, out
    assert out["second"] is not None, out
    assert out["third"] == out["second"], out
    assert (out["kept after first"], out["kept after second"]) == (False, True), out
    assert out["disabled"] is None, out
    assert out["kept when disabled"] is False, out
    assert out["css kept"] is False, out


def test_an_animated_element_is_not_ready() -> None:
    async def check(page: Any) -> tuple[Any, Any]:
        await page.evaluate(
            """() => { document.getElementById('b').animate(
                 [{transform: 'translateX(0)'}, {transform: 'translateX(300px)'}],
                 {duration: 1000, iterations: Infinity}); }"""
        )
        moving = await fastclick.ready_point(page, "#b")
        await page.evaluate("() => document.getElementById('b').getAnimations()[0].cancel()")
        return moving, await fastclick.ready_point(page, "#b")

    moving, still = _run(check)
    assert moving is None
    assert still is not None


async def _aria_ref(page: Any, needle: str) -> str:
    snap = await page.aria_snapshot(mode="ai")
    (line,) = [x for x in snap.splitlines() if needle in x]
    return "aria-ref=" + line.split("[ref=")[1].split("]")[0]  # Playwright's own text


def test_a_ref_is_looked_at_in_the_utility_world_whatever_the_page_broke() -> None:
    """A ref's readiness is read where Playwright resolved it (its utility world): a page
    script that replaced getBoundingClientRect, elementFromPoint and JSON.stringify in its own
    world changes nothing there (the main world's look saw a 0x0 box: not ready). jQuery's
    timers, a page global, are still asked of the page's world; a ref gone is not ready."""

    async def first(page: Any, ref: str) -> Any:
        fastclick._HANDLES.pop(page, None)  # the ref's first click on the page, each time
        return await fastclick.ready_point(page, ref, ref=True)

    async def check(page: Any) -> dict[str, Any]:
        press = await _aria_ref(page, 'button "Press"')
        under = await _aria_ref(page, 'button "Under"')
        out: dict[str, Any] = {"true": await page.eval_on_selector("#b", fastclick.READY_JS)}
        await page.evaluate(
            """() => {
                 Element.prototype.getBoundingClientRect = () => new DOMRect(0, 0, 0, 0);
                 Document.prototype.elementFromPoint = () => null;
                 JSON.stringify = () => 'spoiled';
               }"""
        )
        out["main world"] = await page.eval_on_selector("#b", fastclick.READY_JS)
        out["ready"] = await first(page, press)
        out["covered"] = await first(page, under)
        await page.evaluate("() => { window.jQuery = { timers: [{}] }; }")
        out["jquery busy"] = await first(page, press)
        await page.evaluate("() => { window.jQuery.timers.length = 0; }")
        out["jquery still"] = await first(page, press)
        await page.evaluate("() => document.getElementById('b').remove()")
        out["gone"] = await first(page, press)
        out["kept"] = list(fastclick._HANDLES[page].handles)
        return out

    out = _run(check, engine=True)
    assert isinstance(out["true"], list), out
    assert out["main world"] is False, out  # the page's world is spoiled, as meant
    assert out["ready"] == (out["true"][0], out["true"][1]), out
    assert out["covered"] is None, out
    assert out["jquery busy"] is None, out
    assert out["jquery still"] == out["ready"], out
    assert out["gone"] is fastclick.STALE, out  # known at once (the test below)
    assert out["kept"] == [], out  # no main-world handle is taken on a ref's first click


FIELDS = """<!doctype html><title>fields</title>
<input id=name aria-label=Name value=Ada>
<button id=b>Press</button>
<input id=off aria-label=Off disabled value=x>
<input id=hid aria-label=Hidden value=y>"""


NEEDLES = {
    "name": 'textbox "Name"',
    "b": 'button "Press"',
    "off": 'textbox "Off"',
    "hid": 'textbox "Hidden"',
}


def test_a_stale_ref_is_known_at_once_by_every_look_and_a_ref_not_ready_is_not() -> None:
    """Every look of a ref (click's point, fill's and type's focus, get's read) answers
    STALE for a ref whose element is detached or whose document is gone — what only the
    GONE answer found at the look's first query gives (no wait: the old look polled for the
    missing element READY_LOOK_MS, then timed out with None/False). Given a wait longer than
    the test's whole bound here, it still answers. A ref that is there but not ready is
    never STALE: its look says not now (None/False) and the verb takes Playwright's wait."""
    from browserbay.keeper import reading

    async def looks(page: Any, refs: dict[str, str]) -> dict[str, Any]:
        fastclick._HANDLES.pop(page, None)  # each ref's first look on the page
        return {
            "point": await fastclick.ready_point(page, refs["b"], ref=True),
            "fill": await fastclick.fill_ready(page, refs["name"]),
            "focus": await fastclick.fill_ready(page, refs["name"], ":focus"),
            "text": await reading.read_ref(page, refs["b"], "text"),
            "value": await reading.read_ref(page, refs["name"], "value"),
        }

    async def check(page: Any) -> dict[str, Any]:
        await page.set_content(FIELDS)
        refs = {k: await _aria_ref(page, v) for k, v in NEEDLES.items()}
        out: dict[str, Any] = {"there": await looks(page, refs)}
        await page.evaluate("document.getElementById('hid').style.visibility = 'hidden'")
        out["disabled"] = await fastclick.fill_ready(page, refs["off"])
        out["hidden"] = await fastclick.fill_ready(page, refs["hid"])
        out["hidden point"] = await fastclick.ready_point(page, refs["hid"], ref=True)
        await page.evaluate("document.getElementById('b').style.visibility = 'hidden'")
        out["hidden text"] = await reading.read_ref(page, refs["b"], "text")
        # Detached: the page replaced them (same markup, new elements).
        await page.evaluate("document.body.innerHTML = document.body.innerHTML")
        fastclick.READY_LOOK_MS = 600_000  # a wait would outlast the test's own bound
        out["detached"] = await looks(page, refs)
        await page.set_content(FIELDS)  # a new document, no snapshot taken in it
        out["navigated"] = await looks(page, refs)
        # Refs taken after a navigation name the frame by its number (f1eN), which the
        # next navigation renews: Playwright refuses them "Invalid frame in aria-ref".
        await page.goto("data:text/html," + FIELDS)
        await page.goto("data:text/html," + FIELDS)
        renewed = {k: await _aria_ref(page, v) for k, v in NEEDLES.items()}
        out["renewed prefix"] = renewed["b"]
        await page.goto("data:text/html," + FIELDS)
        out["frame gone"] = await looks(page, renewed)
        return out

    waited = fastclick.READY_LOOK_MS
    try:
        out = _run(check, engine=True)
    finally:
        fastclick.READY_LOOK_MS = waited
    there = out["there"]
    assert isinstance(there["point"], tuple), out
    assert (there["fill"], there["focus"]) == (True, True), out
    assert (there["text"], there["value"]) == ("Press", "Ada"), out
    assert (out["disabled"], out["hidden"]) == (False, False), out
    assert out["hidden point"] is None, out
    assert out["hidden text"] == "", out  # hidden: read as Playwright reads it, not stale
    assert out["renewed prefix"].startswith("aria-ref=f"), out
    for case in ("detached", "navigated", "frame gone"):
        assert out[case] == dict.fromkeys(there, fastclick.STALE), (case, out)
