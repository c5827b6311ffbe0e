"""``bay record start <file> [--cursor]`` / ``bay record stop``: a video of the session's
current tab from its screencast, encoded off the keeper's loop (PyAV), bounded, 0600 — checked
by decoding the file the real keeper wrote of a real Chromium's tab."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import av
import pytest

from browserbay_testing import KEEPER_PLUGINS, Bay, assert_refused, wait_for

pytestmark = pytest.mark.browser


def _decoded(path: Path) -> tuple[int, float, str]:
    """(frames, seconds, codec) of a video, by decoding every frame."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames = sum(1 for _ in container.decode(video=0))
        seconds = float(container.duration or 0) / av.time_base
        return frames, seconds, stream.codec_context.name


def test_three_seconds_of_an_animated_page_are_a_valid_webm(
    bay: Bay, demo: str, tmp_path: Path
) -> None:
    s = "rec-webm"
    out = tmp_path / "demo.webm"
    bay.ok("open", f"{demo}/live.html", session=s)
    began = time.monotonic()
    started = bay.ok("record", "start", str(out), session=s)
    assert started["recording"] is True
    assert not out.exists()  # written beside it, renamed onto it at the stop
    time.sleep(3)
    stopped = bay.ok("record", "stop", session=s)
    spanned = time.monotonic() - began  # the two commands' own time counts too
    assert stopped["frames"] > 0
    frames, seconds, codec = _decoded(out)
    assert codec == "vp8"
    assert frames > 0  # how many depends on the machine's load
    assert 2.5 <= seconds <= spanned + 0.5, (seconds, spanned)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["demo.webm"]  # no part file left
    bay.ok("close", session=s)


def test_an_mp4_with_the_cursor_and_a_limit_that_stops_it_with_a_notice(
    bay: Bay, demo: str, tmp_path: Path
) -> None:
    s = "rec-mp4"
    out = tmp_path / "cursor.mp4"
    bay.ok("open", f"{demo}/live.html", session=s)
    bay.ok("click", "#cell-2-1", session=s)
    bay.ok("record", "start", str(out), "--cursor", "--max-seconds", "1", session=s)
    time.sleep(1.5)
    # An answer after the limit was hit says so (once).
    answer = wait_for(
        lambda: (frame := bay("get", "title", session=s).frame).get("notice") and frame,
        what="the limit's notice",
    )
    assert "the recording to" in answer["notice"]
    assert "reached its limit of 1 s" in answer["notice"]
    stopped = bay.ok("record", "stop", session=s)
    assert stopped["stopped"] == "it reached its limit of 1 s"
    frames, seconds, codec = _decoded(out)
    assert codec == "h264"
    assert frames > 0
    assert seconds <= 1.2, seconds  # cut at the limit, however late the stop came
    bay.ok("close", session=s)


def test_bad_input_is_refused_and_leaves_nothing(bay: Bay, demo: str, tmp_path: Path) -> None:
    s = "rec-bad"
    bay.ok("open", f"{demo}/live.html", session=s)
    frame = assert_refused(bay("record", "start", str(tmp_path / "x.gif"), session=s), "usage")
    assert ".webm" in frame["message"]
    assert_refused(bay("record", "start", session=s), "usage")
    nowhere = tmp_path / "no" / "such" / "dir" / "x.webm"
    frame = assert_refused(bay("record", "start", str(nowhere), session=s), "file_unwritable")
    assert frame["data"]["path"] == str(nowhere)
    assert_refused(bay("record", "stop", session=s), "no_recording")
    assert_refused(
        bay("record", "start", str(tmp_path / "a.webm"), "--max-seconds", "0", session=s), "usage"
    )
    assert list(tmp_path.iterdir()) == []  # nothing was created by a refused start
    bay.ok("record", "start", str(tmp_path / "a.webm"), session=s)
    frame = assert_refused(
        bay("record", "start", str(tmp_path / "b.webm"), session=s), "recording_running"
    )
    assert "a.webm" in frame["message"]
    assert "bay record stop" in frame["way_out"]
    bay.ok("record", "stop", session=s)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.webm"]
    bay.ok("close", session=s)


def test_a_keeper_without_the_encoder_refuses_to_record(demo: str, tmp_path: Path) -> None:
    """A keeper whose environment has no working PyAV (a stand-in ``av`` that fails to
    import, first on its path) refuses ``record start`` with a way out, creating nothing."""
    stub = tmp_path / "stub"
    (stub / "av").mkdir(parents=True)
    (stub / "av" / "__init__.py").write_text('raise ImportError("no FFmpeg libraries here")\n')
    home = tmp_path / "home"
    b = Bay(home, PYTHONPATH=f"{stub}{os.pathsep}{KEEPER_PLUGINS}")
    try:
        b.ok("open", f"{demo}/live.html", session="rec-none")
        out = tmp_path / "x.webm"
        frame = assert_refused(
            b("record", "start", str(out), session="rec-none"), "recorder_unavailable"
        )
        assert "no FFmpeg libraries here" in frame["message"]
        assert "browserbay-core[record]" in frame["way_out"]
        assert not out.exists()
    finally:
        b.stop()
