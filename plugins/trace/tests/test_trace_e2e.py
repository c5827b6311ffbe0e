"""The done-when of the action trace, in real Chromium: a 5-action run on the demo site with
the trace plugin loaded (it is installed with browserbay, so every keeper loads it), then
``bay trace show --last 5``. The report is opened in Chromium too, to see the overlays drawn
where the actions acted. A typed secret and a pressed key appear in no trace file, no
record and not in the report. Also: ``bay_action_traced`` as a hook (what the keeper hands
it), a frame that cannot be taken (the action goes on), and the private modes."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import av
import pytest
from PIL import Image, ImageChops, ImageStat

from browserbay.demo.server import serve
from browserbay.keeper.frames import Recorder, jpeg_size
from browserbay.model import ProfileRef
from browserbay_testing import Bay, assert_refused

pytestmark = pytest.mark.browser
CHROMIUM = "/usr/lib/chromium/chromium"
#: The profile a recorder made by hand (without a keeper) records for.
PROFILE = ProfileRef("bp-1", "p", "chromium", 1, False)
SECRET = "tr-secret-5b1e77c3a9"
KEY = "Shift+KeyQ"  # a key name no page, record or report would contain by chance


@pytest.fixture(scope="module")
def demo() -> Iterator[str]:
    server, base = serve()
    yield base
    server.shutdown()


@pytest.fixture(scope="module")
def bay() -> Iterator[Bay]:
    home = Path(tempfile.mkdtemp(prefix="bay-tr-", dir="/tmp"))
    b = Bay(home, BAY_TRACE="1")
    yield b
    b.stop()
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def run(bay: Bay, demo: str) -> dict[str, Any]:
    """The five actions, then the report. Answers what the test functions look at."""
    s = "five"
    size = bay.ok("eval", "[innerWidth, innerHeight]", session=s)["value"]
    bay.ok("open", f"{demo}/live.html?still", session=s)
    bay.ok("fill", "#name", "-", stdin=SECRET, session=s)
    bay.ok("click", "#cell-1-0", session=s)
    bay.ok("press", KEY, session=s)
    bay.ok("click", "#cell-3-2", session=s)
    clicked = bay.ok("get", "text", "#clicked", session=s)["value"]
    report = bay.ok("trace", "show", "--last", "5", session=s)
    text = bay("trace", "show", "--last", "5", session=s, json_=False)
    return {"viewport": size, "clicked": clicked, "report": report, "text": text}


def _frames_in(html: str) -> list[bytes]:
    return [
        base64.b64decode(m) for m in re.findall(r"data:image/jpeg;base64,([A-Za-z0-9+/=]+)", html)
    ]


def test_the_report_holds_five_before_and_five_after_frames_of_the_right_size(
    run: dict[str, Any],
) -> None:
    data = run["report"]
    path = Path(data["path"])
    assert path.is_file()
    assert run["text"].code == 0
    printed = Path(run["text"].stdout.strip())  # without --json: the report's path, alone
    assert printed.is_file()
    assert printed.parent == path.parent
    assert printed != path  # a second report a moment later does not overwrite the first
    assert [a["verb"] for a in data["actions"]] == ["open", "fill", "click", "press", "click"]
    assert all(a["ok"] and a["missing"] == [] for a in data["actions"]), data["actions"]
    html = path.read_text()
    assert html.count('data-frame="before"') == 5
    assert html.count('data-frame="after"') == 5
    frames = _frames_in(html)
    assert len(frames) == 10
    width, height = run["viewport"]
    for jpeg in frames:
        assert jpeg[:3] == b"\xff\xd8\xff"
        assert jpeg_size(jpeg) == (width, height)
        with Image.open(io.BytesIO(jpeg)) as im:  # a real, whole JPEG
            im.load()
            assert (im.format, im.size) == ("JPEG", (width, height))
    # The frames on disk are the ones inlined.
    for action in data["actions"]:
        for which in ("before", "after"):
            on_disk = Path(action["frames"][which]).read_bytes()
            assert on_disk in frames
            assert action[which] == {"width": width, "height": height, "bytes": len(on_disk)}


def test_click_points_are_inside_the_clicked_elements_and_the_page_change_shows(
    run: dict[str, Any],
) -> None:
    assert run["clicked"] == "cell-3-2"
    clicks = [a for a in run["report"]["actions"] if a["verb"] == "click"]
    # live.html places cell (c, r) at left 20+140c, top 80+80r, 120 x 60 (plus its border).
    for action, (c, r) in zip(clicks, [(1, 0), (3, 2)], strict=True):
        left, top = 20 + 140 * c, 80 + 80 * r
        x, y, w, h = action["box"]
        assert abs(x - left) <= 1
        assert abs(y - top) <= 1
        assert 119 <= w <= 126
        assert 59 <= h <= 66
        px, py = action["point"]
        assert x < px < x + w
        assert y < py < y + h
    first = clicks[0]
    before = Image.open(first["frames"]["before"]).convert("L")
    after = Image.open(first["frames"]["after"]).convert("L")
    status = (20, 330, 320, 348)  # "clicked: none" became "clicked: cell-1-0"
    calm = (20, 240, 140, 300)  # cell 0,2: nothing happened there
    changed = ImageStat.Stat(ImageChops.difference(before.crop(status), after.crop(status)))
    still = ImageStat.Stat(ImageChops.difference(before.crop(calm), after.crop(calm)))
    assert changed.mean[0] > 3 * max(still.mean[0], 0.5), (changed.mean, still.mean)


def test_text_fields_are_masked_in_the_frames(run: dict[str, Any]) -> None:
    fill = next(a for a in run["report"]["actions"] if a["verb"] == "fill")
    x, y, w, h = fill["box"]
    for which in ("before", "after"):
        im = Image.open(fill["frames"][which]).convert("RGB")
        field = ImageStat.Stat(im.crop((int(x) + 3, int(y) + 3, int(x + w) - 3, int(y + h) - 3)))
        # One flat mask colour (#6b7280) where the typed value would show.
        assert all(abs(m - c) < 12 for m, c in zip(field.mean, (0x6B, 0x72, 0x80), strict=True))
        assert max(field.stddev) < 8, field.stddev
        page = ImageStat.Stat(im.crop((900, 500, 1000, 600)))  # negative control: the page
        assert min(page.mean) > 200


def test_no_typed_value_nor_key_is_in_any_trace_file_or_the_report(
    bay: Bay, run: dict[str, Any]
) -> None:
    traces = bay.home / "data" / "traces"
    files = [p for p in traces.rglob("*") if p.is_file()]
    assert any(p.suffix == ".html" for p in files)
    assert sum(p.suffix == ".jpg" for p in files) >= 10
    searched = 0
    for p in files:
        blob = p.read_bytes()
        searched += 1
        for needle in (SECRET, KEY, "KeyQ"):
            assert needle.encode() not in blob, f"{needle} is in {p}"
            assert base64.b64encode(needle.encode()) not in blob
    assert searched == len(files)
    answer = json.dumps(run["report"])
    assert SECRET not in answer
    assert "KeyQ" not in answer
    # The positive control: the secret did reach the page (the field holds it).
    value = bay.ok("get", "value", "#name", session="five")["value"]
    assert value == SECRET


def test_traces_are_private_and_kept_under_the_session_s_own_key(
    bay: Bay, run: dict[str, Any]
) -> None:
    traces = bay.home / "data" / "traces"
    key = run["report"]["key"]
    assert key.startswith("ep-")
    assert "five" not in key  # a session's name never reaches a path
    for p in [traces, *traces.rglob("*")]:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == (0o700 if p.is_dir() else 0o600), (p, oct(mode))
    # Another session's report shows none of these actions (negative control).
    other = bay.ok("trace", "show", "--last", "5", session="someone-else")
    assert other["actions"] == []
    assert other["key"] != key


def test_the_report_renders_its_overlays_in_chromium(run: dict[str, Any]) -> None:
    from playwright.sync_api import sync_playwright

    path = Path(run["report"]["path"])
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.goto(path.as_uri())
            loaded = page.evaluate(
                "Array.from(document.images).map(i => [i.complete, i.naturalWidth])"
            )
            assert len(loaded) == 10
            assert all(done and w > 0 for done, w in loaded), loaded
            drawn = page.evaluate(
                """() => Array.from(document.querySelectorAll('section.action')).map(s => {
                  const f = s.querySelector('[data-frame=before]');
                  const img = f.querySelector('img').getBoundingClientRect();
                  const scale = img.width / Number(f.dataset.width);
                  const c = f.querySelector('circle.point');
                  const r = f.querySelector('rect.box');
                  const at = (e) => { if (!e) return null; const b = e.getBoundingClientRect();
                    return [(b.left + b.width / 2 - img.left) / scale,
                            (b.top + b.height / 2 - img.top) / scale, b.width, b.height]; };
                  return {verb: s.dataset.verb, point: at(c), box: at(r)};
                })"""
            )
        finally:
            browser.close()
    actions = run["report"]["actions"]
    assert [d["verb"] for d in drawn] == [a["verb"] for a in actions]
    for d, a in zip(drawn, actions, strict=True):
        if a["verb"] == "click":
            # The dot is drawn where the click landed, in the frame's own pixels.
            assert d["point"] is not None
            assert abs(d["point"][0] - a["point"][0]) < 2
            assert abs(d["point"][1] - a["point"][1]) < 2
            assert d["point"][2] > 0
        if a["box"]:
            x, y, w, h = a["box"]
            assert d["box"] is not None
            assert abs(d["box"][0] - (x + w / 2)) < 2
            assert abs(d["box"][1] - (y + h / 2)) < 2
        else:
            assert d["box"] is None  # open and press act on no element: nothing drawn
    assert drawn[0]["point"] is None


def test_a_failed_action_is_traced_with_its_code_and_no_frames(bay: Bay, demo: str) -> None:
    s = "missing"
    bay.ok("open", f"{demo}/live.html?still", session=s)
    assert_refused(bay("click", "#nowhere", "--timeout", "3", session=s), "target_not_found")
    last = bay.ok("trace", "show", "--last", "1", session=s)["actions"]
    assert len(last) == 1
    action = last[0]
    assert (action["verb"], action["ok"], action["code"]) == ("click", False, "target_not_found")
    assert action["before"] is None
    assert action["frames"] == {}
    assert any(m.startswith("before:") for m in action["missing"])


def test_trace_show_refuses_a_relative_out_and_writes_an_absolute_one(
    bay: Bay, run: dict[str, Any], tmp_path: Path
) -> None:
    assert_refused(bay("trace", "show", "--out", "here.html", session="five"), "usage")
    out = tmp_path / "mine.html"
    data = bay.ok("trace", "show", "--last", "2", "--out", str(out), session="five")
    assert data["path"] == str(out)
    assert out.read_text().count('data-frame="before"') == 2
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_a_frame_that_cannot_be_taken_is_none_with_its_reason() -> None:
    """The keeper's frame taker on a real page, then on that page closed: the second frame
    is None, with why, and nothing raises (the action would go on)."""
    from playwright.async_api import async_playwright

    async def go() -> tuple[Any, Any]:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM)
            page = await browser.new_page()
            await page.set_content("<p>hello</p>")
            deadline = time.monotonic() + 30
            ok = Recorder("press", {"key": "Enter"}, PROFILE, "t1", page, deadline)
            await ok.take_before()
            await ok.take_after()
            broken = Recorder("press", {"key": "Enter"}, PROFILE, "t1", page, deadline)
            await broken.take_before()
            await page.close()
            await broken.take_after()
            await browser.close()
            return ok.result(), broken.result()

    ok, broken = asyncio.run(go())
    assert ok.before is not None
    assert ok.after is not None
    assert ok.missing == ()
    assert jpeg_size(ok.before.jpeg) == (ok.before.width, ok.before.height)
    assert broken.before is not None
    assert broken.after is None
    assert len(broken.missing) == 1
    assert broken.missing[0].startswith("after: ")


def test_the_next_verb_waits_briefly_for_an_after_frame_then_gives_it_up() -> None:
    """settle(): an after-frame still being taken when the lease's next verb comes is waited
    for at most a tenth of that verb's time; then it is given up, with the reason, rather
    than taken of a page the next verb may be changing. One already in costs nothing."""
    from browserbay.keeper import frames

    async def go() -> tuple[list[str], bool, list[str]]:
        never = asyncio.Event()

        async def stuck() -> None:
            await never.wait()

        slow: Any = SimpleNamespace(after_task=asyncio.create_task(stuck()), missing=[])
        # A 2 s verb: it waits 0.2 s, then gives the frame up (a frame that never comes would
        # otherwise hold it, and this test, for ever).
        trace = frames.LeaseTrace()
        trace.taking(slow)
        await trace.settle(time.monotonic() + 2.0)
        done: Any = SimpleNamespace(after_task=asyncio.create_task(asyncio.sleep(0)), missing=[])
        await done.after_task
        trace.taking(done)
        await trace.settle(time.monotonic() + 30)
        return slow.missing, slow.after_task.cancelled(), done.missing

    missing, cancelled, done_missing = asyncio.run(go())
    assert missing == ["after: given up, the next verb came before it was taken"]
    assert cancelled
    assert done_missing == []


def test_traces_are_kept_per_profile_and_picked_with_profile_or_session(
    bay: Bay, demo: str, run: dict[str, Any]
) -> None:
    """A persistent profile's actions are kept under its id and shown with --profile; a
    session's own browser under its key, shown with --session; each shows only its own."""
    s = "withprofile"
    profile_id = bay.ok("new", "trace-work", session=s)["id"]
    bay.ok("use", "trace-work", session=s)
    bay.ok("open", f"{demo}/live.html?still", session=s)
    bay.ok("click", "#cell-0-0", session=s)
    shown = bay.ok("trace", "show", "--profile", "trace-work", session=s)
    assert shown["key"] == profile_id
    assert [a["verb"] for a in shown["actions"]] == ["open", "click"]
    assert shown["actions"][-1]["profile"]["label"] == "trace-work"
    assert (bay.home / "data" / "traces" / profile_id).is_dir()
    # Another session sees the "five" session's trace by acting as it (--session) ...
    five = bay.ok("--session", "five", "trace", "show", "--last", "5", session="nobody")
    assert five["key"] == run["report"]["key"]
    assert [a["verb"] for a in five["actions"]] == ["open", "fill", "click", "press", "click"]
    # ... but not a profile it has not attached (the same rule as every verb).
    assert_refused(
        bay("trace", "show", "--profile", "trace-work", session="nobody"), "profile_unknown"
    )


def test_a_bad_retention_setting_is_said_and_never_stops_an_action(demo: str) -> None:
    home = Path(tempfile.mkdtemp(prefix="bay-trb-", dir="/tmp"))
    b = Bay(home, BAY_TRACE="1", BAY_TRACE_MB="lots")
    try:
        b.ok("open", f"{demo}/live.html?still", session="bad")
        b.ok("click", "#cell-0-0", session="bad")  # the action goes on
        shown = b.ok("trace", "show", session="bad")
        assert "BAY_TRACE_MB must be a number" in shown["warning"]
        assert shown["actions"] == []  # nothing was written without a retention bound
        log = (home / "logs" / "keeper.log").read_text()
        assert "BAY_TRACE_MB must be a number, not 'lots'" in log
    finally:
        b.stop()
        shutil.rmtree(home, ignore_errors=True)


def test_text_fields_in_iframes_and_shadow_roots_are_masked_too() -> None:
    """A typed value shows in a frame nowhere: not in the page, not in an iframe (a login
    form often lives in one), not inside a web component's open shadow root."""
    from playwright.async_api import async_playwright

    field = "position:absolute;width:200px;height:30px;font-size:20px"
    html = (
        f'<body style="margin:0"><input value="top-secret" style="{field};left:10px;top:10px">'
        '<iframe style="position:absolute;left:10px;top:100px;width:400px;height:100px;'
        f'border:0" srcdoc=\'<body style="margin:0"><input value="frame-secret" '
        f'style="{field};left:20px;top:20px"></body>\'></iframe>'
        '<div id="host" style="position:absolute;left:10px;top:250px"></div>'
        "<script>document.getElementById('host').attachShadow({mode: 'open'}).innerHTML ="
        f' \'<input value="shadow-secret" style="{field};left:0;top:0">\';</script>'
        '<p style="position:absolute;left:500px;top:10px;font-size:20px">page text</p></body>'
    )

    async def go() -> bytes | None:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM)
            page = await browser.new_page()
            await page.set_content(html)
            await page.frames[1].wait_for_selector("input")
            recorder = Recorder("press", {}, PROFILE, "t1", page, time.monotonic() + 30)
            await recorder.take_before()
            await browser.close()
            return recorder.before.jpeg if recorder.before else None

    jpeg = asyncio.run(go())
    assert jpeg is not None
    im = Image.open(io.BytesIO(jpeg)).convert("RGB")
    for name, (x, y) in {"page": (10, 10), "iframe": (30, 120), "shadow root": (10, 250)}.items():
        inside = ImageStat.Stat(im.crop((x + 3, y + 3, x + 197, y + 27)))
        assert max(inside.stddev) < 8, (name, inside.stddev)  # one flat box: no letters
        assert all(abs(m - c) < 12 for m, c in zip(inside.mean, (0x6B, 0x72, 0x80), strict=True))
    # The negative control: the page's own text is drawn (letters make contrast).
    text = ImageStat.Stat(im.crop((500, 10, 620, 40)))
    assert max(text.stddev) > 20


def test_tracing_is_off_unless_the_keeper_starts_with_bay_trace(demo: str) -> None:
    """Off by default (frames of every page kept for days, two screenshots per action): no
    frames are taken, nothing is written, and the report says how to turn it on."""
    home = Path(tempfile.mkdtemp(prefix="bay-tro-", dir="/tmp"))
    b = Bay(home)
    try:
        b.ok("open", f"{demo}/live.html?still", session="off")
        b.ok("click", "#cell-0-0", session="off")
        shown = b.ok("trace", "show", session="off")
        assert shown["tracing"] is False
        assert shown["actions"] == []
        plain = b("trace", "show", session="off", json_=False)
        assert plain.code == 0
        assert plain.stdout.strip().endswith(".html")
        assert "hint: tracing is off" in plain.stderr
        assert "BAY_TRACE=1" in plain.stderr
        traces = home / "data" / "traces"
        written = [p for p in traces.rglob("*") if p.is_file() and "reports" not in p.parts]
        assert written == []
    finally:
        b.stop()
        shutil.rmtree(home, ignore_errors=True)


def test_the_report_links_each_action_to_its_moment_in_the_profiles_recording(
    bay: Bay, demo: str
) -> None:
    """``bay recording on``: the report of a recorded profile's actions has, per action, a
    ``<video>`` of the segment it happened in, by a path relative to the report, starting at
    the action's offset — and that path is a video that decodes, at least that long."""
    s = "rec-linked"
    pid = bay.ok("new", "tr-rec", session=None)["id"]
    bay.ok("recording", "on", "tr-rec", session=None)
    bay.ok("use", "tr-rec", session=s)
    bay.ok("open", f"{demo}/live.html?still", session=s)
    time.sleep(1.0)
    bay.ok("click", "#cell-1-0", session=s)
    time.sleep(1.0)
    bay.ok("click", "#cell-3-2", session=s)
    time.sleep(0.5)
    bay.ok("recording", "off", "tr-rec", session=None)  # the segment is complete on disk
    report = bay.ok("trace", "show", "--last", "3", session=s)
    path = Path(report["path"])
    html = path.read_text()
    # The open that made the tab came before its recording began; both clicks are in it.
    linked = [a["verb"] for a in report["actions"] if a.get("recording")]
    assert linked == ["click", "click"], report["actions"]
    videos = re.findall(r'<video controls preload="metadata" src="([^"]+)"', html)
    assert len(videos) == 2, html[-2000:]
    offsets = []
    for src in videos:
        rel, _, t = src.partition("#t=")
        assert not rel.startswith("/"), rel  # relative to the report
        target = (path.parent / rel).resolve()
        assert target.parent.name == pid
        assert target.name.startswith("rec-")
        with av.open(str(target)) as container:
            frames = sum(1 for _ in container.decode(video=0))
            seconds = float(container.duration or 0) / av.time_base
        assert frames > 0
        assert 0 <= float(t) <= seconds + 0.5, (t, seconds)
        offsets.append(float(t))
    assert offsets == sorted(offsets)  # the later action, later in the video
    assert offsets[-1] - offsets[0] >= 0.9
    bay.ok("close", session=s)
