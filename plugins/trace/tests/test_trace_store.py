"""The trace store, its retention bound, the writer's bound and the report's markup. Fast:
no keeper, no browser (the end-to-end run is test_trace_e2e.py)."""

from __future__ import annotations

import json
import os
import re
import stat
import time
from pathlib import Path

import pytest

from browserbay.keeper.frames import bare_url, jpeg_size
from browserbay.tracestore import segments
from browserbay_trace.plugin import link_recordings
from browserbay_trace.report import render
from browserbay_trace.store import Retention, TraceStore, prune, trace_key
from browserbay_trace.writer import Job, Writer

DAY = 86400.0
# The smallest real JPEG header a browser would send: SOI, an APP0 segment, SOF0 (8 bit,
# 720 x 1280), then EOI. Enough for the size parser and the store (which never decodes).
JPEG = (
    b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    b"\xff\xc0\x00\x11\x08\x02\xd0\x05\x00\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01\xff\xd9"
)


def _record(action_id: str, **extra: object) -> dict[str, object]:
    return {
        "id": action_id,
        "at": time.time(),
        "verb": "click",
        "target": "#go",
        "tab": "t1",
        "url": "http://127.0.0.1/x",
        "url_after": "http://127.0.0.1/x",
        "box": [10, 20, 100, 40],
        "point": [60, 40],
        "before": {"width": 1280, "height": 720, "bytes": len(JPEG)},
        "after": {"width": 1280, "height": 720, "bytes": len(JPEG)},
        "missing": [],
        "ok": True,
        "code": None,
        "ms": 12.0,
        **extra,
    }


def _age(files: list[Path], seconds: float) -> None:
    t = time.time() - seconds
    for f in files:
        os.utime(f, (t, t))


def test_jpeg_size_reads_the_frame_header_and_refuses_what_is_not_a_jpeg() -> None:
    assert jpeg_size(JPEG) == (1280, 720)
    assert jpeg_size(b"\x89PNG\r\n\x1a\n" + JPEG) is None
    assert jpeg_size(b"\xff\xd8\xff\xe0") is None


def test_bare_url_drops_query_and_fragment() -> None:
    assert bare_url("http://h:1/p/q?name=hunter2#frag") == "http://h:1/p/q"
    assert bare_url("about:blank") == "about:blank"


def test_trace_key_keeps_profile_ids_and_hashes_everything_else() -> None:
    assert trace_key("bp-3f9a1c02") == "bp-3f9a1c02"
    ep = trace_key("ep-../../etc")
    assert ep.startswith("ep-")
    assert "/" not in ep
    assert ".." not in ep
    assert ep == trace_key("ep-../../etc") != trace_key("ep-other")


def test_retention_defaults_and_refuses_nonsense_with_the_fix() -> None:
    r = Retention.from_env({})
    assert (r.max_age_s, r.max_bytes) == (7 * DAY, 200 * 1024 * 1024)
    r = Retention.from_env({"BAY_TRACE_DAYS": "0.5", "BAY_TRACE_MB": "1"})
    assert (r.max_age_s, r.max_bytes) == (0.5 * DAY, 1024 * 1024)
    for bad in ("x", "0", "-3"):
        with pytest.raises(ValueError, match="BAY_TRACE_MB") as e:
            Retention.from_env({"BAY_TRACE_MB": bad})
        assert "unset" in str(e.value)


def test_saved_action_is_private_and_listed_newest_last(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "traces")
    for n in range(3):
        store.save(
            "bp-00000001",
            f"{1700000000000 + n:013d}-{n:06d}",
            _record(str(n)),
            {
                "before": JPEG,
                "after": JPEG,
            },
        )
    d = store.profile_dir("bp-00000001")
    assert stat.S_IMODE(store.root.stat().st_mode) == 0o700
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    assert {stat.S_IMODE(f.stat().st_mode) for f in d.iterdir()} == {0o600}
    last2 = store.actions("bp-00000001", 2)
    assert [r["id"] for r in last2] == ["1", "2"]
    assert set(last2[0]["frames"]) == {"before", "after"}
    assert store.actions("bp-99999999", 5) == []


def _fill(store: TraceStore, key: str, n: int, size: int, age: float) -> list[Path]:
    files = []
    for i in range(n):
        action_id = f"{1700000000000 + i:013d}-{i:06d}"
        store.save(key, action_id, _record(action_id), {"before": b"x" * size})
        files += sorted(store.profile_dir(key).glob(f"{action_id}.*"))
    _age(files, age)
    return files


def test_prune_removes_what_is_older_than_the_bound_and_keeps_recent_traces(
    tmp_path: Path,
) -> None:
    store = TraceStore(tmp_path / "traces")
    old = _fill(store, "bp-0000000a", 3, 1000, 8 * DAY)
    recent = _fill(store, "bp-0000000b", 3, 1000, 1 * DAY)
    report = store.ensure(store.reports) / "bp-0000000a-old.html"
    report.write_text("<html>")
    _age([report], 9 * DAY)
    got = prune(store.root, Retention(7 * DAY, 10**9))
    assert got["removed"] == len(old) + 1
    assert not any(f.exists() for f in [*old, report])
    # The negative control: recent, small traces stay, and so does their directory.
    assert all(f.exists() for f in recent)
    assert got["kept"] == len(recent)
    # An emptied profile directory goes at a later pruning (a fresh one may be about to be
    # filled by the writer).
    emptied = store.profile_dir("bp-0000000a")
    assert emptied.is_dir()
    assert list(emptied.iterdir()) == []
    _age([emptied], 120)
    prune(store.root, Retention(7 * DAY, 10**9))
    assert not emptied.exists()
    assert store.profile_dir("bp-0000000b").is_dir()


def test_prune_removes_the_oldest_actions_until_the_rest_fits(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "traces")
    files = _fill(store, "bp-0000000c", 6, 10_000, 0)
    for n, action in enumerate(sorted({f.name.split(".")[0] for f in files})):
        _age(sorted(store.profile_dir("bp-0000000c").glob(f"{action}.*")), 600 - n * 60)
    got = prune(store.root, Retention(7 * DAY, 35_000))
    left = sorted(p.stem for p in store.profile_dir("bp-0000000c").glob("*.json"))
    assert len(left) == 3, left
    assert left == [f"{1700000000000 + i:013d}-{i:06d}" for i in (3, 4, 5)]  # the newest
    assert got["kept_bytes"] <= 35_000
    # Whole actions go: no record is left without its frame, nor a frame without its record.
    stems = [p.name.split(".")[0] for p in store.profile_dir("bp-0000000c").iterdir()]
    assert all(stems.count(s) == 2 for s in set(stems))


def test_the_writer_writes_off_the_caller_and_drops_frames_past_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from browserbay_trace import writer as writer_module

    monkeypatch.setattr(writer_module, "MAX_PENDING_BYTES", len(JPEG) * 2)
    w = Writer(tmp_path / "traces", Retention(7 * DAY, 10**9))
    jobs = [
        Job("bp-0000000d", f"{1700000000000 + i:013d}-{i:06d}", _record(str(i)), {"before": JPEG})
        for i in range(4)
    ]
    with w._cond:  # the writer thread cannot take a job until all four are queued
        for job in jobs:
            w.put(job)  # never blocks (the condition's lock is re-entrant for the caller)
    assert w.flush(10)
    records = TraceStore(tmp_path / "traces").actions("bp-0000000d", 10)
    assert len(records) == 4
    with_frames = [r["id"] for r in records if r["frames"]]
    dropped = [r for r in records if not r["frames"]]
    assert with_frames == ["0", "1"], "the first two fit in the bound and are written"
    for r in dropped:
        assert r["before"] is None
        assert any("dropped" in m for m in r["missing"])
    assert w.dropped_frames == len(dropped)
    w.close()


def test_report_escapes_what_it_shows_and_draws_box_and_point_in_frame_pixels(
    tmp_path: Path,
) -> None:
    store = TraceStore(tmp_path / "traces")
    rec = _record("1", target='<img src=x onerror="alert(1)">')
    store.save("bp-0000000e", "1700000000000-000000", rec, {"before": JPEG, "after": JPEG})
    page = render("trace <b>x</b>", store.actions("bp-0000000e", 5))
    assert "<img src=x" not in page
    assert "&lt;img src=x" in page
    assert "<b>x</b>" not in page
    assert "<script" not in page
    assert "default-src 'none'" in page
    assert 'viewBox="0 0 1280 720"' in page
    assert '<rect class="box" x="10.0" y="20.0" width="100.0" height="40.0"/>' in page
    assert '<circle class="point" cx="60.0" cy="40.0"' in page
    assert page.count("data:image/jpeg;base64,") == 2
    # An action without frames says why instead of showing a broken picture.
    rec = _record("2", before=None, after=None, missing=["before: the action never started"])
    store.save("bp-0000000e", "1700000000001-000001", rec, {})
    page = render("t", store.actions("bp-0000000e", 1))
    assert "no frame" in page
    assert "the action never started" in page
    assert "data:image/jpeg" not in page
    json.dumps(store.actions("bp-0000000e", 2))  # what --json prints is JSON


def test_docs_name_exactly_the_traced_verbs() -> None:
    from browserbay.keeper.frames import TRACED_VERBS

    docs = Path(__file__).resolve().parents[3] / "docs"
    for page, lead in (
        ("trace.md", "One record per action of the verbs"),
        ("hooks.md", "The traced verbs are the page verbs that act:"),
    ):
        text = (docs / page).read_text()
        start = text.index(lead)
        sentence = text[start : text.index(" —" if page == "trace.md" else "(not", start)]
        named = set(re.findall(r"`([a-z-]+)`", sentence))
        assert named == set(TRACED_VERBS), (page, sorted(named ^ set(TRACED_VERBS)))


def _segment(d: Path, started: float, tab: str, seconds: float, size: int) -> Path:
    name = f"rec-{int(started * 1000):013d}-{tab}"
    video = d / f"{name}.webm"
    video.write_bytes(b"\0" * size)
    side = {
        "video": video.name,
        "tab": tab,
        "session": "s1",
        "started": started,
        "ended": started + seconds,
        "frames": 10,
    }
    (d / f"{name}.json").write_text(json.dumps(side))
    for f in (video, d / f"{name}.json"):
        os.utime(f, (started + seconds, started + seconds))
    return video


def test_a_recording_segment_is_one_unit_of_the_same_prune(tmp_path: Path) -> None:
    """A segment and its sidecar go together, by the trace's own age and size bounds, beside
    the actions they are pruned with."""
    root = tmp_path / "traces"
    d = root / "bp-0000abcd"
    d.mkdir(parents=True)
    now = time.time()
    old = _segment(d, now - 9 * DAY, "t1", 60, 1000)
    big = _segment(d, now - 3600, "t2", 60, 6000)
    new = _segment(d, now - 60, "t3", 30, 6000)
    store = TraceStore(root)
    store.save("bp-0000abcd", "0000000000001-000000", _record("0000000000001-000000"), {})
    got = prune(root, Retention(7 * DAY, 10_000), now)
    left = sorted(p.name for p in d.iterdir())
    assert old.name not in left
    assert old.with_suffix(".json").name not in left
    assert big.name not in left
    assert big.with_suffix(".json").name not in left
    assert new.name in left
    assert new.with_suffix(".json").name in left
    assert got["removed"] == 4


def test_the_report_links_an_action_to_the_segment_of_its_tab_and_time(tmp_path: Path) -> None:
    d = tmp_path / "bp-0000abcd"
    d.mkdir()
    now = time.time()
    video = _segment(d, now - 100, "t1", 50, 10)
    _segment(d, now - 100, "t2", 50, 10)
    records = [
        {"at": now - 80, "tab": "t1", "session": "s1", "verb": "click"},
        {"at": now - 20, "tab": "t1", "session": "s1", "verb": "click"},  # after it ended
        {"at": now - 80, "tab": "t1", "session": "s2", "verb": "click"},  # another session's
    ]
    link_recordings(records, segments(tmp_path, "bp-0000abcd"))
    assert records[0]["recording"] == {"path": str(video), "offset": 20.0}
    assert "recording" not in records[1]
    assert "recording" not in records[2]
    out = tmp_path / "reports"
    out.mkdir()
    page = render("t", records[:1], out)
    assert f'src="../bp-0000abcd/{video.name}#t=20.00"' in page
    assert "media-src 'self' file:" in page
