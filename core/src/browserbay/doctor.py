"""``bay doctor``: is this machine ready? Rows of ``ok``/``warn``/``fail``, each with the fix.

The core checks what it owns — plugins (loaded, or broken and why), providers (runnable, or
why not), the keeper (running? its socket's directory private?) and the disk. Everything a
plugin needs from the machine (a browser binary, Xvfb, the AT-SPI bus, a keychain) comes from
its ``bay_doctor_checks`` hook. Runs in the ``bay doctor`` process: no keeper is started or
stopped, nothing is left running.
"""

from __future__ import annotations

import _socket
import os
import shutil
import socket
import struct
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio

from browserbay import client, identity, keys, protocol, sockpath
from browserbay.model import DoctorCheck
from browserbay.paths import bay_paths
from browserbay.plugins import PluginError, Plugins, load_plugins
from browserbay.refusals import Refusal
from browserbay.registry.fleet import KeeperRow
from browserbay.settings import SettingsError, load_settings

#: Free space under which the disk row warns / fails (profiles and archives live there).
DISK_WARN_BYTES = 1 << 30
DISK_FAIL_BYTES = 200 << 20

#: How long one plugin's checks may take before their row says so.
HOOK_TIMEOUT_S = 30.0

STATUS_ORDER = {"ok": 0, "warn": 1, "fail": 2}
#: The order rows are shown in; areas a plugin names itself come after these.
AREAS = (
    "browser",
    "display",
    "at-spi",
    "keychain",
    "plugins",
    "providers",
    "keeper",
    "registry",
    "fleet",
    "disk",
)


def run_checks(env: Mapping[str, str] | None = None) -> list[DoctorCheck]:
    """Every row: the plugins' hooks first (machine), then plugins, providers, keeper, disk."""
    env = os.environ if env is None else env
    try:
        plugins = load_plugins(env, strict=False)
    except PluginError as exc:
        rows = [
            DoctorCheck(
                "plugins",
                "plugin manager",
                "fail",
                str(exc),
                "fix what the message names (BAY_DISABLE_PLUGINS=<name> skips a plugin)",
            )
        ]
        return rows + keeper_rows(env) + registry_rows(env) + fleet_rows(env) + disk_rows(env)
    rows = [
        *hook_rows(plugins),
        *plugin_rows(plugins),
        *provider_rows(plugins),
        *keeper_rows(env),
        *registry_rows(env),
        *fleet_rows(env),
        *disk_rows(env),
    ]
    rank = {area: n for n, area in enumerate(AREAS)}
    return sorted(rows, key=lambda r: rank.get(r.area, len(AREAS)))


def hook_rows(plugins: Plugins) -> list[DoctorCheck]:
    """Each plugin's ``bay_doctor_checks``, run side by side (each may start a short-lived
    process), in plugin order. A hook that raises or overruns is a ``fail`` row naming it."""
    impls = plugins.hooks.bay_doctor_checks()
    pool = ThreadPoolExecutor(max_workers=max(1, len(impls)), thread_name_prefix="doctor")
    futures = [(name, pool.submit(function)) for name, function in impls]
    rows: list[DoctorCheck] = []
    for name, future in futures:
        try:
            got: Any = future.result(timeout=HOOK_TIMEOUT_S)
        except TimeoutError:
            rows.append(
                DoctorCheck(
                    "plugins",
                    name,
                    "fail",
                    f"its bay_doctor_checks did not answer within {HOOK_TIMEOUT_S:g}s",
                    f"report it to the plugin's authors (BAY_DISABLE_PLUGINS={name} skips it)",
                )
            )
            continue
        except Exception as exc:
            rows.append(
                DoctorCheck(
                    "plugins",
                    name,
                    "fail",
                    f"its bay_doctor_checks raised {exc!r}",
                    f"report it to the plugin's authors (BAY_DISABLE_PLUGINS={name} skips it)",
                )
            )
            continue
        rows.extend(r for r in got or () if isinstance(r, DoctorCheck))
    pool.shutdown(wait=False, cancel_futures=True)
    return rows


def plugin_rows(plugins: Plugins) -> list[DoctorCheck]:
    loaded = [i for i in plugins.infos if i.error is None]
    rows = [
        DoctorCheck(
            "plugins",
            "loaded",
            "ok",
            f"{len(loaded)}: " + ", ".join(i.name for i in loaded),
        )
    ]
    for info in plugins.infos:
        if info.error is None:
            continue
        remove = f"bay uninstall {info.distribution}" if info.distribution else "remove it"
        rows.append(
            DoctorCheck(
                "plugins",
                info.name,
                "fail",
                f"not loaded (the keeper skips it): {info.error}",
                f"{remove}, or reinstall it; BAY_DISABLE_PLUGINS={info.name} silences it",
            )
        )
    return rows


def provider_rows(plugins: Plugins) -> list[DoctorCheck]:
    """One row per provider, as ``bay backend`` judges it (one place: runnable, its probe,
    and a required key nobody configured)."""
    from browserbay.keeper.backends import backend_listing

    rows = []
    for p in sorted(backend_listing(plugins)["providers"], key=lambda r: str(r["id"])):
        label = f"{p['id']} (tier {p['tier']})"
        if p["available"]:
            rows.append(DoctorCheck("providers", label, "ok", p["summary"]))
            continue
        key = p["key"]
        if p["runnable"] and p["problem"] is None and key is not None and key["missing"]:
            what = f"{key['integration'] or p['id']} {key['missing'][0]}"
            detail = f"cannot run here: no key ({what} is not set)"
            fix = f"bay keys set {what}"
        else:
            detail = f"cannot run here: {p['reason']}"
            fix = "bay backend   (the other providers; a profile on this one is refused "
            fix += "backend_unavailable)"
        rows.append(DoctorCheck("providers", label, "warn", detail, fix))
    return rows


def _mode(path: Path) -> int | None:
    try:
        return path.lstat().st_mode & 0o777
    except OSError:
        return None


def _peer_pid(sock: _socket.socket) -> int | None:
    """The pid at the other end of a unix socket (Linux ``SO_PEERCRED``)."""
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    return int(struct.unpack("3i", raw)[0])


def registry_rows(env: Mapping[str, str]) -> list[DoctorCheck]:
    """Which backend holds the registry (``BAY_REGISTRY``), and for PostgreSQL whether its
    server takes a connection now (within the connect timeout; nothing is written)."""
    url = env.get("BAY_REGISTRY", "")
    if not url:
        where = bay_paths(env).registry
        return [DoctorCheck("registry", "registry", "ok", f"SQLite file {where}")]
    # psycopg's import costs a second or more: only when PostgreSQL is configured.
    from browserbay.registry import RegistryUnreachable, RegistryUrlBad, redact
    from browserbay.registry.pg import probe

    shown = redact(url)
    try:
        version = probe(url)
    except RegistryUrlBad as exc:
        detail = f"BAY_REGISTRY is no PostgreSQL URL: {exc}"
        fix = "set BAY_REGISTRY=postgresql://USER@HOST/DBNAME, or unset it (the SQLite file)"
        return [DoctorCheck("registry", "registry", "fail", detail, fix)]
    except RegistryUnreachable as exc:
        detail = f"PostgreSQL {shown} does not answer: {exc}"
        fix = "start the server or fix BAY_REGISTRY; the keeper refuses registry_unreachable"
        return [DoctorCheck("registry", "registry", "fail", detail, fix)]
    schema = f"schema version {version}" if version else "no schema yet (the keeper makes it)"
    return [DoctorCheck("registry", "registry", "ok", f"PostgreSQL {shown}: connects, {schema}")]


def session_socket_rows(path: str) -> list[DoctorCheck]:
    """On a session socket (``BAY_SOCKET``): does it answer, and which session is it bound
    to? The agent's only way in — the owner's socket is neither reachable nor its concern.
    Only the hello is exchanged: no verb, and nothing is ever started."""
    try:
        conn = client.connect_session(path)
    except Refusal as exc:
        fix = exc.way_out or client.ASK_OWNER
        return [DoctorCheck("keeper", "session socket", "fail", f"{path}: {exc.message}", fix)]
    hello = conn.keeper
    conn.close()
    sid = identity.fixed_by(hello) or "?"
    detail = f"{path}: the keeper answers (version {hello.get('version')}); you are session {sid}"
    return [DoctorCheck("keeper", "session socket", "ok", detail)]


def fleet_rows(env: Mapping[str, str]) -> list[DoctorCheck]:
    """The fleet this keeper's registry is shared with (PostgreSQL only; a SQLite file is a
    fleet of one): the keepers seen, alive or not; this home's claims; each live peer's link
    proven by a TLS + HMAC handshake — and no verb sent; and whether a key store of this
    home sits on the fleet's shared storage. Read only: one read-only connection."""
    url = env.get("BAY_REGISTRY", "")
    if not url:
        return []
    from browserbay.registry import RegistryUnreachable, RegistryUrlBad
    from browserbay.registry.fleet import SqlClaims, SqlKeepers
    from browserbay.registry.pg import PgReader

    paths = bay_paths(env)
    try:
        settings = load_settings(env, file=paths.config_file).settings
    except SettingsError as exc:
        return [DoctorCheck("fleet", "fleet", "fail", str(exc), "fix the setting it names")]
    rows = _shared_key_rows(paths.data / "keys", settings.fleet_data)
    id_file = paths.state / "keeper-id"
    me = id_file.read_text().strip() if id_file.is_file() else None
    try:
        reader = PgReader(url)
    except (RegistryUrlBad, RegistryUnreachable):
        return rows  # the registry row says why
    try:
        keepers = SqlKeepers(reader).all()
        held = SqlClaims(reader).counts(settings.fleet_ttl)
    except Exception as exc:  # no fleet tables yet: the first keeper makes them
        return [
            *rows,
            DoctorCheck("fleet", "keepers", "ok", f"none seen yet ({exc.__class__.__name__})"),
        ]
    finally:
        reader.close()
    ttl = settings.fleet_ttl
    died = [k for k in keepers if k.stopped_at is None and not k.alive(ttl)]
    listing = "; ".join(
        f"{k.id} on {k.host}: "
        + (
            "stopped"
            if k.stopped_at is not None
            else f"alive (beat {k.beat_age:.0f}s ago)"
            if k.alive(ttl)
            else f"dead (silent {k.beat_age:.0f}s, TTL {ttl:g}s)"
        )
        + (" — this home" if k.id == me else "")
        for k in keepers
    )
    alive = sum(k.alive(ttl) for k in keepers)
    detail = f"{len(keepers)} keeper(s) seen, {alive} alive: {listing or 'none yet'}"
    if died:
        hosts = ", ".join(sorted({k.host for k in died}))
        fix = (
            f"start the keeper on {hosts} again; its claims expired after BAY_FLEET_TTL and "
            "its profiles are served elsewhere when their data is on BAY_FLEET_DATA"
        )
        rows.append(DoctorCheck("fleet", "keepers", "warn", detail, fix))
    else:
        rows.append(DoctorCheck("fleet", "keepers", "ok", detail))
    if me is not None:
        mine = held.get(me, 0)
        rows.append(
            DoctorCheck("fleet", "claims", "ok", f"{me} (this home) holds {mine} profile claim(s)")
        )
    peers = [k for k in keepers if k.alive(ttl) and k.id != me and k.listen]
    return rows + _link_rows(env, me, peers)


def _shared_key_rows(keys_dir: Path, fleet_data: str) -> list[DoctorCheck]:
    """A fail row when this home's key store is under the fleet's shared storage."""
    if not fleet_data:
        return []
    real, root = Path(os.path.realpath(keys_dir)), Path(os.path.realpath(fleet_data))
    if not real.is_relative_to(root):
        return [DoctorCheck("fleet", "keys", "ok", f"{keys_dir} is off BAY_FLEET_DATA ({root})")]
    return [
        DoctorCheck(
            "fleet",
            "keys",
            "fail",
            f"{keys_dir} is under BAY_FLEET_DATA ({root}), which every keeper mounts: the "
            "keeper stores no key there and reads none from there",
            "give this keeper a BAY_HOME on its own disk, or BAY_FLEET_DATA a directory outside it",
        )
    ]


def _link_rows(env: Mapping[str, str], me: str | None, peers: list[KeeperRow]) -> list[DoctorCheck]:
    """Each live peer's link: a TLS + HMAC handshake as this home's keeper, then closed —
    no verb is ever sent."""
    if not peers:
        return []
    try:
        secret = keys.fleet_secret(env)
    except keys.FleetSecretError as exc:
        return [DoctorCheck("fleet", "link", "fail", str(exc), "fix the secret as it says")]
    if secret is None or me is None:
        why = "no fleet secret (BAY_FLEET_SECRET_FILE)" if secret is None else "no keeper id"
        return [
            DoctorCheck(
                "fleet",
                "link",
                "warn",
                f"{len(peers)} live peer(s) not checked: {why} in this home",
                "run bay doctor where the keeper starts, with its BAY_FLEET_SECRET_FILE",
            )
        ]
    from browserbay.keeper.link import connect_peer

    async def handshake(peer: KeeperRow) -> str | None:
        assert peer.listen is not None
        try:
            stream = await connect_peer(peer.listen, secret.reveal().encode(), me, peer.id)
        except Refusal as refused:
            return str(refused.fields.get("reason", refused.code))
        await stream.aclose()
        return None

    rows = []
    for peer in peers:
        problem = anyio.run(handshake, peer)
        name = f"link to {peer.host}"
        if problem is None:
            detail = f"{peer.id} at {peer.listen}: TLS 1.3 + HMAC handshake proven (no verb sent)"
            rows.append(DoctorCheck("fleet", name, "ok", detail))
        else:
            fix = (
                "give every keeper the same BAY_FLEET_SECRET_FILE secret, and let this "
                "machine reach its BAY_FLEET_LISTEN address"
            )
            rows.append(
                DoctorCheck("fleet", name, "fail", f"{peer.id} at {peer.listen}: {problem}", fix)
            )
    return rows


def keeper_rows(env: Mapping[str, str]) -> list[DoctorCheck]:
    """Is a keeper listening, and is the socket's directory private? Never starts one, and
    never retires one of another version (``connect`` would). On a session socket
    (``BAY_SOCKET``), that socket instead (:func:`session_socket_rows`)."""
    granted = sockpath.session_socket(env)
    if granted is not None:
        return session_socket_rows(granted)
    paths = bay_paths(env)
    sock_path = paths.socket
    rows: list[DoctorCheck] = []
    sock = client._connect(str(sock_path)) if sock_path.exists() else None
    if sock is None:
        stale = " (a stale socket file is left: the next keeper replaces it)"
        rows.append(
            DoctorCheck(
                "keeper",
                "keeper",
                "ok",
                f"not running{stale if sock_path.exists() else ''}; the first verb starts it "
                f"({sock_path})",
            )
        )
    else:
        pid = _peer_pid(sock)
        try:
            conn = client._handshake(sock)
        except (OSError, ValueError, TimeoutError, Refusal) as exc:
            sock.close()
            rows.append(
                DoctorCheck(
                    "keeper",
                    "keeper",
                    "fail",
                    f"a process holds {sock_path} but says no hello ({exc})",
                    "bay keeper logs   (then bay keeper stop; the next verb starts a new one)",
                )
            )
        else:
            hello = conn.keeper
            conn.close()
            if protocol.compatible(hello):
                rows.append(
                    DoctorCheck(
                        "keeper",
                        "keeper",
                        "ok",
                        f"running, pid {pid}, version {hello.get('version')} ({sock_path})",
                    )
                )
            else:
                rows.append(
                    DoctorCheck(
                        "keeper",
                        "keeper",
                        "warn",
                        f"running version {hello.get('version')}, not this bay's: the next "
                        "verb asks it to exit and starts this version",
                        "bay keeper status",
                    )
                )
    for where in (sock_path.parent, paths.runtime):
        mode = _mode(where)
        if mode is None:
            continue  # made private at the keeper's first start
        if mode & 0o077:
            rows.append(
                DoctorCheck(
                    "keeper",
                    f"mode of {where}",
                    "fail",
                    f"{oct(mode)}: others can reach the keeper's socket",
                    f"chmod 700 {where}",
                )
            )
        else:
            rows.append(DoctorCheck("keeper", f"mode of {where}", "ok", oct(mode)))
        if where == paths.runtime:
            break
    return rows


def disk_rows(env: Mapping[str, str]) -> list[DoctorCheck]:
    paths = bay_paths(env)
    where = paths.data
    while not where.exists() and where != where.parent:
        where = where.parent
    usage = shutil.disk_usage(where)
    gib = usage.free / (1 << 30)
    detail = f"{gib:.1f} GiB free under {where} (profiles, archives, screenshots)"
    fix = f"free space on that disk, or bay profiles then bay forget <unused profile> ({where})"
    if usage.free < DISK_FAIL_BYTES:
        return [DoctorCheck("disk", "data dir", "fail", detail, fix)]
    if usage.free < DISK_WARN_BYTES:
        return [DoctorCheck("disk", "data dir", "warn", detail, fix)]
    return [DoctorCheck("disk", "data dir", "ok", detail)]


def render(rows: list[DoctorCheck]) -> str:
    """One line per row, the fix under it; a last line counting each status."""
    lines = []
    for r in rows:
        lines.append(f"{r.status:<4} {r.area:<9} {r.name:<26} {r.detail}")
        if r.fix and r.status != "ok":
            lines.append(f"{'':<41}fix: {r.fix}")
    counts = {s: sum(1 for r in rows if r.status == s) for s in STATUS_ORDER}
    lines.append(f"{counts['ok']} ok, {counts['warn']} warn, {counts['fail']} fail")
    return "\n".join(lines)


def worst(rows: list[DoctorCheck]) -> str:
    return max((r.status for r in rows), key=STATUS_ORDER.__getitem__, default="ok")
