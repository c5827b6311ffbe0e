"""Crash consistency of registry writes (the bounded part of campaigns/writes.py): every
multi-statement write is one transaction, a writer killed mid-write leaves the store whole,
and what a keeper killed between two writes leaves half-made is put right at the next start."""

from __future__ import annotations

import sqlite3
import tarfile
from pathlib import Path

from browserbay.paths import bay_paths
from browserbay_testing import Bay
from campaigns.writes import store_campaign, transaction_audit


def test_every_registry_write_of_several_statements_is_one_transaction(tmp_path: Path) -> None:
    rows, problems = transaction_audit(tmp_path)
    assert problems == []
    several = {r["method"] for r in rows if r["writes"] > 1}
    assert {
        "attachments.attach",
        "attachments.detach",
        "kept_tabs.keep",
        "kept_tabs.park",
        "profiles.delete",
    } <= several


def test_a_writer_killed_mid_write_leaves_the_registry_whole(tmp_path: Path) -> None:
    figures = store_campaign(12, 7, tmp_path)
    assert figures["kills"] >= 10
    assert figures["problems"] == []


def test_a_hold_left_without_its_attachment_is_released_at_keeper_start(
    fresh_bay: Bay,
) -> None:
    """`use --exclusive` writes the hold, then the attachment: a keeper killed between the
    two used to leave the profile held by a session that never attached it, refusing
    everybody else profile_busy for the idle timeout (15 min)."""
    pid = fresh_bay.ok("new", "held")["id"]
    fresh_bay.ok("use", "held", "--exclusive", session="a")
    fresh_bay.ok("keeper", "stop")
    registry = bay_paths({"BAY_HOME": str(fresh_bay.home)}).registry
    with sqlite3.connect(registry) as db:  # the state a kill between the two writes leaves
        db.execute("DELETE FROM attachments WHERE session='a'")
        assert db.execute("SELECT holder FROM holds WHERE profile=?", (pid,)).fetchone()
    used = fresh_bay.ok("use", "held", session="b")
    assert used["attachments"] == [f"held ({pid})"]
    assert (
        "hold(s) of a cut `use --exclusive` released"
        in fresh_bay("keeper", "logs", json_=False).stdout
    )


def test_profile_directories_a_cut_new_or_forget_left_go_at_keeper_start(
    fresh_bay: Bay,
) -> None:
    """A `new` cut between its directory and its row leaves an empty directory; a `forget`
    cut between the row and the removal leaves an archived one. Both go at the next start;
    a directory with data and no archive is never touched."""
    fresh_bay.ok("status")
    fresh_bay.ok("keeper", "stop")
    paths = bay_paths({"BAY_HOME": str(fresh_bay.home)})
    root = paths.data / "profiles"
    root.mkdir(parents=True, exist_ok=True)
    (root / "bp-0000aaaa").mkdir()  # a cut `new`
    archived = root / "bp-0000bbbb"  # a cut `forget`
    archived.mkdir()
    (archived / "Local State").write_text("{}")
    (paths.data / "archive").mkdir(exist_ok=True)
    with tarfile.open(paths.data / "archive" / "bp-0000bbbb-20260101-000000.tar.gz", "w:gz") as t:
        t.add(archived, arcname="bp-0000bbbb")
    kept = root / "bp-0000cccc"  # somebody's data: left alone
    kept.mkdir()
    (kept / "Local State").write_text("{}")
    fresh_bay.ok("status")
    assert sorted(p.name for p in root.iterdir()) == ["bp-0000cccc"]
    orphans = fresh_bay.ok("profiles", "--orphans")["orphans"]
    assert orphans["directories"] == [str(kept)]
