"""``bay record start <file> [--cursor]`` / ``bay record stop``: a video of the session's
current tab from its screencast, encoded off the keeper's loop (PyAV), bounded, 0600 — checked
by decoding the file the real keeper wrote of a real Chromium's tab."""

from __future__ import annotations

import json
import os
import stat
import subprocess
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


# -- continuous recording (bay recording on <profile>) -----------------------------------------


def _segments(home: Path, profile_id: str) -> list[Path]:
    d = home / "data" / "traces" / profile_id
    return sorted(d.glob("rec-*.webm")) if d.is_dir() else []


def test_a_profile_opted_in_has_every_tab_of_its_sessions_recorded_and_the_agent_is_told_once(
    bay: Bay, demo: str
) -> None:
    s = "rec-cont"
    made = bay.ok("new", "rec-cont-work", session=None)
    pid = made["id"]
    on = bay.ok("recording", "on", "rec-cont-work", session=None)
    assert on["recording"] is True
    assert on["changed"] is True
    again = bay.ok("recording", "on", "rec-cont-work", session=None)  # twice: said, harmless
    assert again["changed"] is False
    bay.ok("use", "rec-cont-work", session=s)
    first = bay("open", f"{demo}/live.html", session=s).frame
    assert first["ok"] is True
    assert "is being recorded" in first.get("notice", ""), first
    bay.ok("tab", "new", f"{demo}/live.html", session=s)
    later = bay("get", "title", session=s).frame
    assert "is being recorded" not in later.get("notice", "")  # told once
    listed = wait_for(
        lambda: (
            (rows := bay.ok("recording", "list", session=None)["profiles"])
            and len(rows[0]["tabs"]) == 2
            and rows
        ),
        what="both tabs recorded",
    )
    assert listed[0]["profile"] == pid
    time.sleep(2)
    off = bay.ok("recording", "off", "rec-cont-work", session=None)
    assert off["changed"] is True
    videos = _segments(bay.home, pid)
    assert len(videos) == 2, videos  # one segment per tab, complete on disk
    for video in videos:
        assert stat.S_IMODE(os.stat(video).st_mode) == 0o600
        side = video.with_suffix(".json")
        assert stat.S_IMODE(os.stat(side).st_mode) == 0o600
        said = json.loads(side.read_text())
        assert said["session"] == s
        assert said["video"] == video.name
        assert said["ended"] > said["started"]
        frames, seconds, codec = _decoded(video)
        assert codec == "vp8"
        assert frames > 0
        assert seconds > 1.0
    assert not list((bay.home / "data" / "traces" / pid).glob(".*part"))
    assert bay.ok("recording", "list", session=None)["profiles"] == []
    bay.ok("close", session=s)


def test_recording_bad_input_is_refused_with_a_way_out(bay: Bay) -> None:
    frame = assert_refused(
        bay("recording", "on", "no-such-profile", session=None), "profile_unknown"
    )
    assert "bay profiles" in frame["way_out"]
    assert_refused(bay("recording", "on", session=None), "usage")
    assert_refused(bay("recording", "off", "no-such-profile", session=None), "profile_unknown")
    bay.ok("new", "rec-never", session=None)
    assert bay.ok("recording", "off", "rec-never", session=None)["changed"] is False


def test_an_opt_in_outlives_the_keeper(tmp_path: Path) -> None:
    """The owner's opt-in is kept in the home (read off the loop at the keeper's start): a
    restarted keeper still lists it, and its file is the owner's alone."""
    b = Bay(tmp_path / "home")
    try:
        b.ok("new", "rec-kept", session=None)
        b.ok("recording", "on", "rec-kept", session=None)
        kept = b.home / "state" / "recording.json"
        assert stat.S_IMODE(os.stat(kept).st_mode) == 0o600
        b.ok("keeper", "stop", session=None)
        b.ok("keeper", "start", session=None)
        again = b.ok("recording", "on", "rec-kept", session=None)
        assert again["changed"] is False  # still on after the restart
    finally:
        b.stop()


def test_a_full_disk_stops_the_recording_with_a_notice_and_the_keeper_goes_on(
    demo: str, tmp_path: Path
) -> None:
    """The trace store on a 4 MiB tmpfs: no segment fits, the profile's recording stops, its
    session is told, and the keeper keeps answering."""
    home = tmp_path / "home"
    traces = home / "data" / "traces"
    traces.mkdir(parents=True, mode=0o700)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(traces)]
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    b = Bay(home)
    try:
        b.ok("new", "rec-full", session=None)
        b.ok("recording", "on", "rec-full", session=None)
        b.ok("use", "rec-full", session="rec-full")
        b.ok("open", f"{demo}/live.html", session="rec-full")
        answer = wait_for(
            lambda: (
                "stopped" in (f := b("get", "title", session="rec-full").frame).get("notice", "")
                and f
            ),
            what="the full disk's notice",
        )
        assert "is full" in answer["notice"]
        assert "bay recording on rec-full" in answer["notice"]
        assert b.ok("get", "title", session="rec-full")  # still serving
        rows = b.ok("recording", "list", session=None)["profiles"]
        assert "is full" in rows[0]["stopped"]
    finally:
        b.stop()
        subprocess.run(["umount", str(traces)])
