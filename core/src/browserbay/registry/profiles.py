"""Persistent profiles (migration 2), their provider options (migration 4), their owner and
sharing (migration 8).

A profile's directory under the data root is stored relative to it (migration 10): the data
root is the keeper's (``BAY_FLEET_DATA``, storage every keeper of a fleet mounts, else its
home's data dir), so every keeper finds a shared profile's data where it mounts it, and a
:class:`ProfileRow` always carries the absolute path on this keeper. An adopted directory
(or one outside the root) stays absolute: it is one machine's.

A profile is made with a released claim of the keeper that made it (migration 10's
``profile_claims``): where its data is until another keeper runs it — a keeper that cannot
reach the data asks that one (:meth:`browserbay.keeper.fleet.Fleet.place`)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from browserbay.registry.db import Sql
from browserbay.registry.fleet import store_now

#: The owner of a profile made on the owner's channel (the home's own socket), and of every
#: profile that existed before owners did: the column's default in migration 8.
THE_OWNER = "owner"
#: How the owner column names a session group: ``group:<name>``. The prefix keeps a group
#: called ``owner`` (a valid group name) from ever reading as the owner.
GROUP_PREFIX = "group:"

Sharing = Literal["owner", "granted"]
#: ``owner``: only its owner uses it (never named in a grant); ``granted``: its owner uses it,
#: and the owner may grant it to a session socket.
SHARINGS: tuple[Sharing, ...] = ("owner", "granted")


def group_owner(group: str) -> str:
    """The owner column's value for a profile a session group made."""
    return GROUP_PREFIX + group


@dataclass(frozen=True)
class ProfileRow:
    id: str
    label: str
    provider: str
    dir: str
    proxy: str | None
    allowed_domains: tuple[str, ...]
    headed: bool
    adopted: bool
    created_at: float
    last_used: float | None
    options: Mapping[str, str] = field(default_factory=dict)
    """Provider options (migration 4): ``{"cdp_url": ...}`` for a ``cdp`` profile."""
    owner: str = THE_OWNER
    """Who the profile belongs to (migration 8): :data:`THE_OWNER`, or ``group:<name>`` for the
    session group that made it (:func:`group_owner`)."""
    sharing: Sharing = "granted"
    """Who else may use it (migration 8): see :data:`SHARINGS`."""


class Profiles(Protocol):
    """The profiles the keeper made or adopted."""

    def create(self, row: ProfileRow) -> None: ...
    def delete(self, profile_id: str) -> None:
        """The profile and everything that names it (attachments, kept tabs, its hold and
        its queue, group defaults, its proposal and version record), in one write."""

    def used(self, profile_id: str) -> None: ...
    def all(self) -> list[ProfileRow]:
        """Every profile, oldest first."""

    def set_backend(self, profile_id: str, provider: str, options: Mapping[str, str]) -> None:
        """A switch: the profile's provider and options in one write; it settles the
        profile's proposal, if any."""


_COLS = (
    "id, label, provider, dir, proxy, allowed_domains, headed, adopted, created_at, last_used, "
    "options, owner, sharing"
)


class SqliteProfiles:
    def __init__(self, db: Sql, keeper_id: str, data_root: Path | None = None):
        self.db = db
        self.keeper_id = keeper_id
        self.data_root = data_root

    def _stored(self, directory: str) -> str:
        """The directory as the row keeps it: relative when under the data root."""
        if self.data_root is None or not directory:
            return directory
        path = Path(directory)
        if not path.is_relative_to(self.data_root):
            return directory
        return str(path.relative_to(self.data_root))

    def _found(self, stored: str) -> str:
        """The directory on this keeper: a relative one under its data root."""
        if self.data_root is None or not stored or Path(stored).is_absolute():
            return stored
        return str(self.data_root / stored)

    def create(self, row: ProfileRow) -> None:
        now = store_now(self.db)
        profile = (
            f"INSERT INTO profiles({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",  # noqa: S608 - a constant
            (
                row.id,
                row.label,
                row.provider,
                self._stored(row.dir),
                row.proxy,
                json.dumps(list(row.allowed_domains)),
                int(row.headed),
                int(row.adopted),
                row.created_at,
                row.last_used,
                json.dumps(dict(row.options)),
                row.owner,
                row.sharing,
            ),
        )
        made_here = (
            "INSERT INTO profile_claims(profile, keeper_id, since, renewed_at, released_at) "  # noqa: S608 - constants
            f"VALUES (?, ?, {now}, {now}, {now}) ON CONFLICT(profile) DO NOTHING",
            (row.id, self.keeper_id),
        )
        self.db.tx(profile, made_here)

    def delete(self, profile_id: str) -> None:
        self.db.tx(
            ("DELETE FROM attachments WHERE profile=?", (profile_id,)),
            ("DELETE FROM kept_tabs WHERE profile=?", (profile_id,)),
            ("DELETE FROM holds WHERE profile=?", (profile_id,)),
            ("DELETE FROM hold_queue WHERE profile=?", (profile_id,)),
            ("DELETE FROM profile_claims WHERE profile=?", (profile_id,)),
            ("DELETE FROM group_defaults WHERE profile=?", (profile_id,)),
            ("DELETE FROM backend_proposals WHERE profile=?", (profile_id,)),
            ("DELETE FROM profile_versions WHERE profile=?", (profile_id,)),
            ("DELETE FROM key_homes WHERE profile=?", (profile_id,)),
            ("DELETE FROM profiles WHERE id=?", (profile_id,)),
        )

    def used(self, profile_id: str) -> None:
        self.db.execute("UPDATE profiles SET last_used=? WHERE id=?", (time.time(), profile_id))

    def all(self) -> list[ProfileRow]:
        rows = self.db.execute(
            f"SELECT {_COLS} FROM profiles ORDER BY created_at"  # noqa: S608 - a constant
        ).fetchall()
        return [
            ProfileRow(
                r[0],
                r[1],
                r[2],
                self._found(r[3]),
                r[4],
                tuple(json.loads(r[5])),
                bool(r[6]),
                bool(r[7]),
                r[8],
                r[9],
                json.loads(r[10] or "{}"),
                r[11],
                _sharing(r[12]),
            )
            for r in rows
        ]

    def set_backend(self, profile_id: str, provider: str, options: Mapping[str, str]) -> None:
        self.db.tx(
            (
                "UPDATE profiles SET provider=?, options=? WHERE id=?",
                (provider, json.dumps(dict(options)), profile_id),
            ),
            ("DELETE FROM backend_proposals WHERE profile=?", (profile_id,)),
        )


def _sharing(value: str) -> Sharing:
    """A stored sharing value; anything but the two (a hand-edited file) reads as the
    stricter ``owner``."""
    return "granted" if value == "granted" else "owner"
