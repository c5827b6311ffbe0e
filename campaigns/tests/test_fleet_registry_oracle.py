"""The fleet campaign's registry oracle (campaigns/fleet.py ``registry_problems``) on a real
PostgreSQL schema: a whole registry passes, and each lost or half-applied row it is meant to
find — a lost attachment, a hold without its attachment, a claim of a keeper that never
registered, a waiter left queued, a second schema version, a table gone — is named."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from browserbay.registry.pg import PgDatabase
from browserbay_testing.postgres import PgServer
from campaigns.fleet import registry_problems

LIVE = "kp-live0001"


@pytest.fixture
def registry(postgres: PgServer, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A migrated schema holding one whole fleet's rows: a live keeper, a profile with its
    directory, a session attached to it, the keeper's claim and a hold with its attachment."""
    with postgres.fresh_schema_url() as url:
        PgDatabase(url).close()  # migrated on open
        (tmp_path / "profiles" / "bp-1").mkdir(parents=True)
        now = time.time()
        with psycopg.connect(url, autocommit=True) as conn:
            q = conn.execute
            q(
                "INSERT INTO keepers(id, host, pid, version, started_at, beat_at) "
                "VALUES (%s, 'host-a', 1, 'v', %s, %s)",
                (LIVE, now, now),
            )
            q(
                "INSERT INTO profiles(id, label, provider, dir, created_at) "
                "VALUES ('bp-1', 'work', 'chromium', 'profiles/bp-1', %s)",
                (now,),
            )
            q("INSERT INTO sessions VALUES ('s0', 'api', %s, %s, NULL)", (now, now))
            q("INSERT INTO session_state(session) VALUES ('s0')")
            q(
                "INSERT INTO attachments(session, profile, position, attached_at) "
                "VALUES ('s0', 'bp-1', 0, %s)",
                (now,),
            )
            q(
                "INSERT INTO profile_claims VALUES ('bp-1', %s, %s, %s, NULL)",
                (LIVE, now, now),
            )
            q(
                "INSERT INTO holds(profile, holder, group_name, since, keeper_id) "
                "VALUES ('bp-1', 's0', 'g', %s, %s)",
                (now, LIVE),
            )
        yield url, tmp_path


def _problems(url: str, data: Path) -> list[str]:
    return registry_problems(url, data, {LIVE}, {"s0": "bp-1"}, {"bp-1"})


def _run(url: str, sql: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql)


def test_a_whole_registry_has_no_problem(registry: tuple[str, Path]) -> None:
    assert _problems(*registry) == []


@pytest.mark.parametrize(
    ("breakage", "named"),
    [
        ("DELETE FROM holds; DELETE FROM attachments", "the attachment of s0 to bp-1 was lost"),
        ("DELETE FROM attachments", "hold of bp-1 by s0 (via kp-live0001) without its"),
        ("UPDATE profile_claims SET keeper_id = 'kp-nobody'", "a keeper that never registered"),
        (
            "INSERT INTO hold_queue(profile, session, group_name, keeper_id, enqueued_at) "
            f"VALUES ('bp-1', 's9', 'g9', '{LIVE}', 0)",
            "s9 still queued for bp-1 on live kp-live0001",
        ),
        ("INSERT INTO bay_schema VALUES (1)", "bay_schema holds"),
        ("DROP TABLE key_homes", "table key_homes is gone"),
        ("DELETE FROM sessions", "attachments of s0 without a sessions row"),
        ("UPDATE keepers SET stopped_at = 1", "claim of bp-1 still held by kp-live0001"),
    ],
)
def test_each_lost_or_half_applied_row_is_named(
    registry: tuple[str, Path], breakage: str, named: str
) -> None:
    url, data = registry
    _run(url, breakage)
    found = _problems(url, data)
    assert any(named in p for p in found), found
