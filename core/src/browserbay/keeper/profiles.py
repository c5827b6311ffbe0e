"""Persistent profiles: the registry's rows, handles, who may use which, and the verbs that
manage them (``new``, ``profiles``, ``forget``, ``adopt``, ``group``).

Ids are minted (``bp-<8 hex>``); a label is free text that never reaches a path, an argv or
a command line. Profile directories are 0700 under the data dir.

A profile belongs to someone (migration 8): to the owner when it was made on the owner's
channel (and every profile made before owners existed), else to the session group that made
it on a session socket. A session socket's group is the session its grant is bound to: a
``--group`` in a frame is self-declared, so it never decides whose profile is whose (a child
``<parent>.<n>`` is a session of its own, so it owns nothing of its parent's). On a session
socket a session may use only the profiles its grant names, the profiles its own group made,
and its own ephemeral browser (:meth:`ProfileBook.usable`); anything else it names is refused
``profile_not_granted``, and is looked up among those only, so the refusal says nothing of
whether such a profile exists.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import secrets
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio

from browserbay.keeper.channels import OWNER, Channel, Grant
from browserbay.keys import check_stored_option
from browserbay.model import ProfileRef, ProviderRow
from browserbay.paths import BayPaths, ensure_private
from browserbay.plugins import Plugins
from browserbay.refusals import Refusal
from browserbay.registry import (
    SHARINGS,
    THE_OWNER,
    Attachments,
    Db,
    ProfileRow,
    Profiles,
    Proposals,
    Sharing,
    group_owner,
)

log = logging.getLogger("browserbay.keeper")

#: Seconds during which an empty profile directory under a shared data root may still be
#: another keeper's `new` in flight (its row follows within milliseconds).
IN_FLIGHT = 60.0

T = TypeVar("T")


#: Arguments of ``bay new`` that are provider options (stored as the profile's ``options``).
PROVIDER_OPTIONS: tuple[str, ...] = ("cdp_url",)


def mint_profile_id() -> str:
    return f"bp-{secrets.token_hex(4)}"


def check_label(label: str, verb: str) -> str:
    label = label.strip()
    if not label or len(label) > 200 or any(ord(c) < 32 for c in label):
        raise Refusal("usage", detail="a label is 1-200 printable characters", verb=verb)
    return label


def looks_like_path(handle: str) -> bool:
    return "/" in handle or handle.startswith(("~", "."))


def parse_domains(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    domains = tuple(d.strip().lower().lstrip(".") for d in value.split(",") if d.strip())
    for d in domains:
        if "/" in d or ":" in d or " " in d:
            raise Refusal(
                "usage",
                detail=f"{d!r} is not a domain (give host names like example.org,api.example.org)",
                verb="new",
            )
    return domains


def owner_of(channel: Channel) -> str:
    """Who a profile made on ``channel`` belongs to: the owner on the owner's channel, else
    the group of the session the socket is bound to (its fixed session id)."""
    return THE_OWNER if channel.grant is None else group_owner(channel.grant.session)


def not_granted(handle: str, grant: Grant) -> Refusal:
    """``handle`` is not for this session socket: the refusal names the handle as given and
    nothing else of the profile, and the owner's exact command that grants it (for another
    keeper's session, the grant is that keeper's own: browserbay.keeper.link.forwarded)."""
    command = f"bay session grant {grant.session} --socket {grant.socket} --profile {handle}"
    origin, sep, keeper = str(grant.socket).partition(":")
    if origin == "fleet" and sep:
        session = grant.session.rsplit("@", 1)[0]
        command = (
            f"bay session grant {session} --socket <its socket> --profile {handle}   (on "
            f"keeper {keeper}, where that session is; a profile whose sharing is owner is "
            "reached from an owner's channel only)"
        )
    return Refusal("profile_not_granted", profile=handle, session=grant.session, command=command)


def _is_user_data_dir(directory: Path) -> bool:
    return directory.is_dir() and (
        (directory / "Local State").exists() or (directory / "Default").is_dir()
    )


def dir_size(path: str, budget: int = 200_000) -> int | None:
    """Bytes under ``path`` (bounded: None past ``budget`` files). Run in a worker thread."""
    total, seen = 0, 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            seen += 1
            if seen > budget:
                return None
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


class ProfileBook:
    def __init__(
        self,
        profiles: Profiles,
        attachments: Attachments,
        proposals: Proposals,
        paths: BayPaths,
        plugins: Plugins,
        db: Db,
        data_root: Path | None = None,
    ):
        self.profiles = profiles
        #: Where new profiles' directories go (``BAY_FLEET_DATA``; None: the home's data).
        self.data_root = data_root if data_root is not None else paths.data
        self.attachments = attachments
        self.proposals = proposals
        self.paths = paths
        self.plugins = plugins
        self.db = db
        self.rows: dict[str, ProfileRow] = {}
        self.attached: dict[str, int] = {}

    @property
    def root(self) -> Path:
        return self.data_root / "profiles"

    def data_dir(self, profile_id: str) -> Path | None:
        """The profile's data directory on this keeper (None: none known, or a remote
        browser's profile, which has none)."""
        row = self.rows.get(profile_id)
        return Path(row.dir) if row is not None and row.dir else None

    async def load(self) -> None:
        rows = await self.db(self.profiles.all)
        self.rows = {r.id: r for r in rows}
        for pid in self.rows:
            self.attached[pid] = len(await self.db(self.attachments.of_profile, pid))
        removed = await anyio.to_thread.run_sync(self._leftovers)
        if removed:
            log.info("removed %d profile dir(s) a killed keeper left: %s", len(removed), removed)

    async def learn(self) -> bool:
        """Read the registry's profiles again and add those this book does not know: in a
        fleet another keeper makes profiles in the shared registry after this one's start.
        Rows already known stay as this book keeps them (it is their one writer here).
        True when one was added."""
        rows = await self.db(self.profiles.all)
        new = [r for r in rows if r.id not in self.rows]
        for row in new:
            self.rows[row.id] = row
            self.attached[row.id] = len(await self.db(self.attachments.of_profile, row.id))
        return bool(new)

    async def find_fresh(self, handle: str, channel: Channel) -> ProfileRow:
        """:meth:`find`, and on an unknown name the registry is read again first (:meth:`learn`)
        — so a profile another keeper of the fleet made is found; a name nobody made is
        refused as before (one registry read per miss)."""
        try:
            return self.find(handle, channel)
        except Refusal as exc:
            if exc.code not in ("profile_unknown", "profile_not_granted") or looks_like_path(
                handle
            ):
                raise
            if not await self.learn():
                raise
        return self.find(handle, channel)

    async def set_backend(self, row: ProfileRow, provider: str, options: dict[str, str]) -> None:
        """A backend switch: the profile's provider and options, in the registry (which
        settles its proposal) and in :attr:`rows` (this book is their one writer)."""
        await self.db(self.profiles.set_backend, row.id, provider, options)
        self.rows[row.id] = dataclasses.replace(row, provider=provider, options=options)

    async def used(self, profile_id: str) -> None:
        """A browser started on the profile: its ``last_used`` is now."""
        await self.db(self.profiles.used, profile_id)

    def _leftovers(self) -> list[str]:
        """At keeper start: the profile directories a killed keeper left half-made or
        half-removed go — an empty one without a row (a ``new`` cut before its row) or one
        already archived (a ``forget`` cut before its removal). Any other directory without
        a row is left alone (``bay profiles --orphans`` lists it). Under a fleet's shared data
        root (``BAY_FLEET_DATA``) an empty one younger than :data:`IN_FLIGHT` seconds may be
        another live keeper's ``new`` between its directory and its row: it stays."""
        known = {Path(r.dir).name for r in self.rows.values()}
        shared = self.data_root != self.paths.data
        recent = time.time() - IN_FLIGHT
        archive = self.paths.data / "archive"
        removed: list[str] = []
        if not self.root.is_dir():
            return removed
        for d in self.root.iterdir():
            if d.name in known or not d.name.startswith("bp-") or not d.is_dir():
                continue
            if not any(d.iterdir()):
                if shared and d.stat().st_mtime > recent:
                    continue
                d.rmdir()
            elif archive.is_dir() and any(archive.glob(f"{d.name}-*.tar.gz")):
                shutil.rmtree(d, ignore_errors=True)
            else:
                continue
            removed.append(d.name)
        return removed

    def ref(self, row: ProfileRow, chosen: str, among: int = 0) -> ProfileRef:
        provider = self.plugins.providers.get(row.provider)
        return ProfileRef(
            id=row.id,
            label=row.label,
            provider=row.provider,
            tier=provider.tier if provider is not None else 1,
            ephemeral=False,
            attached=self.attached.get(row.id, 0),
            chosen=chosen,
            among=among,
        )

    def usable(self, row: ProfileRow, channel: Channel) -> bool:
        """``channel`` may use the profile: the owner's channel every one; a session socket
        the ones its grant names (while their sharing is ``granted``) and its group's own;
        another keeper's request the one it forwards for (its scope), shared or its caller's
        own (:attr:`LinkPeer.owner`: the owner's profile whose sharing is ``owner`` is
        reachable from the owner's channel of any keeper, never from an agent's)."""
        grant = channel.grant
        if grant is None:
            return True
        link = channel.link
        if link is not None:
            # Another keeper's session: the profiles it forwards for only; a shared one, or
            # its caller's own (whose sharing is owner: the fleet's owner is one registry's).
            return row.id in grant.profiles and (
                row.sharing == "granted" or (link.owner is not None and row.owner == link.owner)
            )
        if row.owner == owner_of(channel):
            return True
        return row.id in grant.profiles and row.sharing == "granted"

    def visible(self, channel: Channel) -> list[ProfileRow]:
        """The profiles ``channel`` may use (and see), oldest first."""
        return [r for r in self.rows.values() if self.usable(r, channel)]

    def check(self, row: ProfileRow, handle: str, channel: Channel) -> ProfileRow:
        """``row``, named ``handle``, if ``channel`` may use it; else ``profile_not_granted``."""
        if channel.grant is not None and not self.usable(row, channel):
            raise not_granted(handle, channel.grant)
        return row

    def reaches(self, ref: ProfileRef, channel: Channel) -> bool:
        """``channel`` may act on a lease of the session on this profile: its own ephemeral
        browser always, a persistent profile by :meth:`usable` (one forgotten meanwhile: it
        holds nothing of anybody's any more)."""
        row = None if ref.ephemeral else self.rows.get(ref.id)
        return row is None or self.usable(row, channel)

    def check_ref(self, ref: ProfileRef, channel: Channel) -> None:
        """:meth:`reaches`, else ``profile_not_granted`` naming the profile's id: for a road
        that reaches a lease by something else than its profile (a tab id)."""
        if channel.grant is not None and not self.reaches(ref, channel):
            raise not_granted(ref.id, channel.grant)

    def usable_ids(self, handles: Sequence[str], channel: Channel) -> tuple[str, ...]:
        """The ids of ``handles`` (labels or ids), each one ``channel`` may use, in order and
        once each: what a session may hand on to a child it makes."""
        ids = [self.find(h, channel).id for h in handles]
        return tuple(dict.fromkeys(ids))

    def grantable(self, session: str, handles: Sequence[str]) -> tuple[str, ...]:
        """The ids of ``handles`` for a grant the owner makes for ``session``: each profile
        must exist and be ``granted`` (one whose sharing is ``owner`` never leaves its
        owner), else ``grant_refused``; in order, once each."""
        ids: list[str] = []
        for handle in handles:
            try:
                row = self.find(handle, OWNER)
            except Refusal as r:
                raise Refusal(
                    "grant_refused",
                    session=session,
                    reason=f"--profile {handle}: {r.message}",
                    fix=r.way_out,
                ) from None
            if row.sharing != "granted":
                raise Refusal(
                    "grant_refused",
                    session=session,
                    reason=f"--profile {handle}: profile {row.label} ({row.id}) is its "
                    f"owner's only (sharing owner)",
                    fix="grant it without that --profile (its owner uses it on their own channel)",
                )
            ids.append(row.id)
        return tuple(dict.fromkeys(ids))

    def find(self, handle: str, channel: Channel) -> ProfileRow:
        """A profile by id or label; a path or an unknown name is refused with the fix. On a
        session socket only the profiles it may use are looked at: any other handle, known
        or not, is ``profile_not_granted``."""
        if looks_like_path(handle):
            raise Refusal(
                "profile_unknown",
                handle=handle,
                why="a profile: it looks like a directory, and profiles are named by label or id",
                fix=f"bay adopt {handle} <label>   (registers that directory as a profile)",
            )
        rows = {r.id: r for r in self.visible(channel)}
        if handle in rows:
            return rows[handle]
        matches = [r for r in rows.values() if r.label == handle]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            ids = ", ".join(r.id for r in matches)
            raise Refusal(
                "profile_unknown",
                handle=handle,
                why=f"one profile: {len(matches)} share that label ({ids})",
                fix=f"name it by id: one of {ids}",
            )
        if channel.grant is not None:
            raise not_granted(handle, channel.grant)
        raise Refusal(
            "profile_unknown",
            handle=handle,
            why="a known profile",
            fix=f"bay profiles   (or bay new {handle})",
        )

    # -- verbs ------------------------------------------------------------------------

    async def new(self, args: dict[str, Any], channel: Channel) -> tuple[dict[str, Any], str]:
        """A profile of the caller's: the owner's on the owner's channel (``granted`` unless
        ``--sharing owner``: the owner made it to hand to agents, or says it never leaves
        them), else its session group's (``owner`` unless ``--sharing granted``: what an agent
        logs in to stays its own unless it says the owner may grant it to others)."""
        label = check_label(str(args["label"]), "new")
        sharing = _sharing(args.get("sharing"), "granted" if channel.is_owner else "owner")
        provider = str(args.get("provider") or "chromium")
        if provider not in self.plugins.providers:
            raise Refusal(
                "backend_unavailable",
                provider=provider,
                reason="no installed plugin provides it",
                fix="bay plugins   (lists the providers you can use)",
            )
        prow = self.plugins.providers[provider]
        if args.get("allowed_domains") and not prow.capabilities.allowed_domains:
            raise Refusal(
                "capability_missing",
                provider=provider,
                verb="new --allowed-domains",
                capability="allowed_domains",
            )
        options = await self._options(prow, args)
        pid = mint_profile_id()
        directory = self.root / pid  # the id, never the label, names the directory
        if prow.capabilities.owns_dir:
            await anyio.to_thread.run_sync(ensure_private, self.root)
            await anyio.to_thread.run_sync(ensure_private, directory)
        row = ProfileRow(
            id=pid,
            label=label,
            provider=provider,
            dir=str(directory) if prow.capabilities.owns_dir else "",
            proxy=args.get("proxy"),
            allowed_domains=parse_domains(args.get("allowed_domains")),
            headed=bool(args.get("headed")),
            adopted=False,
            created_at=time.time(),
            last_used=None,
            options=options,
            owner=owner_of(channel),
            sharing=sharing,
        )
        await self.db(self.profiles.create, row)
        self.rows[pid] = row
        self.attached[pid] = 0
        whose = _whose(row.owner, row.sharing)
        return self.describe(row), f"{label} ({pid}) · {provider} · {whose}\nuse it: bay use {pid}"

    def owns_dirs(self, provider: object) -> bool:
        """The provider ``new`` would use (default chromium) gives each profile a directory of
        its own (a browser we start), not somebody else's running browser."""
        row = self.plugins.providers.get(str(provider or "chromium"))
        return row is not None and row.capabilities.owns_dir

    async def discard(self, profile_id: str) -> None:
        """Undo a ``new`` that failed after its row was made: row and directory gone, no
        archive (nothing of anybody's was in it yet)."""
        row = self.rows.pop(profile_id, None)
        self.attached.pop(profile_id, None)
        await self.db(self.profiles.delete, profile_id)
        if row is not None and row.dir:
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(row.dir, ignore_errors=True))

    async def _options(self, prow: ProviderRow, args: dict[str, Any]) -> dict[str, str]:
        """The provider options given to ``new`` (``--cdp-url``), checked by the provider."""
        given = {name: str(args[name]) for name in PROVIDER_OPTIONS if args.get(name)}
        for name, value in given.items():
            check_stored_option(name, value)  # a registry row every keeper reads: no key
        for name in given:
            if name not in prow.options:
                raise Refusal(
                    "usage",
                    detail=f"the {prow.id} provider takes no --{name.replace('_', '-')}",
                    verb="new",
                )
        if prow.check_options is not None:
            given = await anyio.to_thread.run_sync(prow.check_options, given)
        return given

    async def adopt(self, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
        directory = Path(str(args["dir"]))
        if not directory.is_absolute():
            raise Refusal("usage", detail="adopt needs an absolute directory path", verb="adopt")
        looks = await anyio.to_thread.run_sync(_is_user_data_dir, directory)
        if not looks:
            raise Refusal(
                "usage",
                detail=f"{directory} is not a Chromium user-data-dir (no 'Local State' or "
                "'Default' in it)",
                verb="adopt",
            )
        for r in self.rows.values():
            if Path(r.dir) == directory:
                raise Refusal(
                    "usage", detail=f"{directory} is already the profile {r.id}", verb="adopt"
                )
        label = check_label(str(args["label"]), "adopt")
        pid = mint_profile_id()
        row = ProfileRow(
            pid,
            label,
            "chromium",
            str(directory),
            None,
            (),
            False,
            True,
            time.time(),
            None,
        )
        await self.db(self.profiles.create, row)
        self.rows[pid] = row
        self.attached[pid] = 0
        return self.describe(row), f"adopted {directory} as {row.label} ({pid})"

    async def forget(
        self, handle: str, running: Callable[[str], bool]
    ) -> tuple[dict[str, Any], str]:
        row = self.find(handle, OWNER)  # the owner's verb: refused on a session socket
        holders = await self.db(self.attachments.of_profile, row.id)
        if holders or running(row.id):
            raise Refusal(
                "profile_busy",
                profile=row.label,
                holder=", ".join(holders) or "(its browser is still running)",
                group="-",
                since="now",
                on_host="",
                fix=f"bay detach --profile {row.id} --session <each of them>, then forget it",
            )
        archive = None
        owned = not row.adopted and bool(row.dir)  # a cdp profile has no directory of ours
        if owned:
            archive = await anyio.to_thread.run_sync(self._archive, row)
        await self.db(self.profiles.delete, row.id)
        self.rows.pop(row.id, None)
        self.attached.pop(row.id, None)
        if owned:
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(row.dir, ignore_errors=True))
        data = {"forgotten": row.id, "archive": str(archive) if archive else None}
        where = (
            f"; archived to {archive}"
            if archive
            else " (adopted: its directory is untouched)"
            if row.adopted
            else " (its browser is somebody else's: nothing of it was touched)"
        )
        return data, f"forgot {row.label} ({row.id}){where}"

    def _archive(self, row: ProfileRow) -> Path:
        """The directory, as a private tar.gz, before anything is removed."""
        import tarfile  # at a profile's first removal, not at the keeper's start

        archive_dir = self.paths.data / "archive"
        ensure_private(archive_dir)
        target = archive_dir / f"{row.id}-{time.strftime('%Y%m%d-%H%M%S')}.tar.gz"
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f, tarfile.open(fileobj=f, mode="w:gz") as tar:
            tar.add(row.dir, arcname=row.id)
        return target

    async def listing(
        self, orphans: bool, running: Callable[[str], dict[str, Any] | None], channel: Channel
    ) -> tuple[dict[str, Any], str]:
        """The profiles ``channel`` may use (every one on the owner's); on a session socket
        the sessions attached to each are its own only."""
        rows = []
        for r in self.visible(channel):
            size = await anyio.to_thread.run_sync(dir_size, r.dir) if r.dir else None
            live = running(r.id)
            sessions = await self.db(self.attachments.of_profile, r.id)
            if channel.session is not None:
                sessions = [s for s in sessions if s == channel.session]
            rows.append(
                dict(
                    self.describe(r),
                    running=live is not None,
                    browser=live,
                    disk_bytes=size,
                    sessions=sessions,
                    proposal=(
                        proposal.as_row(channel.session)
                        if (proposal := await self.db(self.proposals.get, r.id))
                        else None
                    ),
                )
            )
        data: dict[str, Any] = {"profiles": rows}
        lines = [
            f"{p['label']:<16} {p['id']}  {p['provider']:<9} tier {p['tier']}  "
            f"{_whose(p['owner'], p['sharing'])}  "
            f"{'running' if p['running'] else 'stopped':<8} sessions {len(p['sessions'])}  "
            f"disk {_mib(p['disk_bytes'])}  "
            f"pss {_mib(_kib((p['browser'] or {}).get('pss_kib'))) if p['browser'] else '-'}"
            f"  last used {_ago(p['last_used'])}"
            + (
                f"\n  proposed: switch to {p['proposal']['provider']} by session "
                f"{p['proposal']['by']}; accept: bay backend --accept --profile {p['id']}"
                if p["proposal"]
                else ""
            )
            for p in rows
        ]
        if orphans:
            found, missing = await anyio.to_thread.run_sync(self._orphans)
            data["orphans"] = {"directories": found, "rows_without_directory": missing}
            lines += [f"orphan directory {d}" for d in found]
            lines += [f"profile {m} has no directory" for m in missing]
        return data, "\n".join(lines) if lines else "(no profiles yet: bay new <label>)"

    def _orphans(self) -> tuple[list[str], list[str]]:
        known = {Path(r.dir).name for r in self.rows.values()}
        found = []
        if self.root.is_dir():
            found = sorted(
                str(d) for d in self.root.iterdir() if d.is_dir() and d.name not in known
            )
        missing = [r.id for r in self.rows.values() if r.dir and not Path(r.dir).is_dir()]
        return found, missing

    def describe(self, row: ProfileRow) -> dict[str, Any]:
        provider = self.plugins.providers.get(row.provider)
        return {
            "id": row.id,
            "label": row.label,
            "provider": row.provider,
            "tier": provider.tier if provider is not None else None,
            "proxy": bool(row.proxy),
            "allowed_domains": list(row.allowed_domains),
            "headed": row.headed,
            "adopted": row.adopted,
            "options": sorted(row.options),
            "created_at": row.created_at,
            "last_used": row.last_used,
            "owner": row.owner,
            "sharing": row.sharing,
        }


def _sharing(value: object, default: Sharing) -> Sharing:
    """``--sharing`` as given, else ``default``. A request's is held to the row's choices
    before it gets here, but a plugin's ``keeper_verb`` call is not: anything else is
    ``usage`` here too, and nothing is made."""
    if value is None or value == "":
        return default
    for sharing in SHARINGS:
        if value == sharing:
            return sharing
    raise Refusal(
        "usage", detail=f"--sharing is {' or '.join(SHARINGS)}, not {value!r}", verb="new"
    )


def _whose(owner: str, sharing: str) -> str:
    """Owner and sharing, as ``bay profiles`` and ``bay new`` say them."""
    who = "the owner" if owner == THE_OWNER else owner.replace(":", " ", 1)
    return f"{who}'s, sharing {sharing}"


def _kib(n: int | None) -> int | None:
    """KiB to bytes (None: not known, e.g. somebody else's browser has no pid of ours)."""
    return None if n is None else n * 1024


def _mib(n: int | None) -> str:
    return "?" if n is None else f"{n / 1048576:.1f}MiB"


def _ago(t: float | None) -> str:
    if t is None:
        return "never"
    s = time.time() - t
    return (
        f"{s:.0f}s ago"
        if s < 120
        else f"{s / 60:.0f}min ago"
        if s < 7200
        else f"{s / 3600:.0f}h ago"
    )
