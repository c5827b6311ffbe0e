"""Provider keys: where a key comes from, and the one place it is ever revealed.

Key sources (``bay_key_sources``) each have a precedence, ``user`` or ``cluster``;
integration rows (``bay_integrations``) say which fields a key has. :class:`KeyBook` composes
them: :meth:`KeyBook.resolve` answers ``{source, values, missing}`` with the precedence
**the user's own > the cluster default > none**, and never mixes the two (a user's key is
never sent to a cluster-chosen URL, a cluster key never to a URL the user typed).

A key is held in a :class:`Secret`, whose repr and str are masked and which cannot be
JSON-encoded or pickled; views are :class:`Masked` objects (``••••`` + the last 4). The
plaintext leaves a Secret in exactly two places: :meth:`KeyBook.child_env` (the environment
of the one provider child that needs it, under the vendor's own variable name) and a key
test's one request (:mod:`browserbay.keytest`).

The keeper calls :func:`exec_without_keys` first thing: when ``BAY_INTEGRATION_*``,
``BAY_INTEGRATIONS``, ``BAY_KEYS_PASSPHRASE``, ``BAY_FLEET_SECRET`` or a ``BAY_REGISTRY``
carrying a password are in its environment it re-executes itself
with a clean one, handing their values over on an inherited file descriptor — removing a
variable (``unsetenv``) never rewrites the initial block ``/proc/<pid>/environ`` shows. Then
:func:`seal_environment` reads them into a private snapshot, so neither the keeper's
``/proc`` entry nor any child it starts (the Playwright driver, a browser) carries them;
sources read them from :func:`key_environ`.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import urllib.parse
from collections.abc import Callable, Collection, Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from dataclasses import field as _field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from browserbay import scrub
from browserbay.distributions import BY_NAME as DISTRIBUTIONS
from browserbay.model import IntegrationRow, KeyField, KeySource, KeyStored, KeyVerdict, ProviderRow
from browserbay.refusals import Refusal

INTEGRATION_PREFIX = "BAY_INTEGRATION_"
INTEGRATIONS_VAR = "BAY_INTEGRATIONS"
PASSPHRASE_VAR = "BAY_KEYS_PASSPHRASE"  # noqa: S105 - a variable name, not a password
STORE_VAR = "BAY_KEYS_STORE"
#: The fleet link's shared secret (issue 22): given directly, or as a file's path in
#: :data:`FLEET_SECRET_FILE_VAR` (never on argv). A key like any other: sealed at start.
FLEET_SECRET_VAR = "BAY_FLEET_SECRET"  # noqa: S105 - a variable name, not a secret
FLEET_SECRET_FILE_VAR = "BAY_FLEET_SECRET_FILE"  # noqa: S105 - a variable name
#: The registry's URL: sealed like a key when it carries a password (``postgresql://u:pw@…``),
#: which lets its reader into every keeper's rows of the fleet.
REGISTRY_VAR = "BAY_REGISTRY"
#: libpq's own password variable: a key like the others when the keeper is started with it
#: (sealed at the start; the registry's connections get it from the sealed snapshot).
PGPASSWORD_VAR = "PGPASSWORD"
#: The shortest fleet secret taken: 32 characters (an ``openssl rand -hex 16`` is exactly it).
MIN_FLEET_SECRET = 32
#: Set only by :func:`exec_without_keys` for the process it becomes: the inherited fd that
#: holds the key variables (JSON), read once and closed by :func:`seal_environment`.
KEYS_FD_VAR = "BAY_KEYS_FD"
MASK = "••••"
#: A value shorter than this shows no tail at all: its last 4 would be most of it.
MIN_TAIL_LENGTH = 12
MAX_VALUE = 8192

Source = Literal["user", "cluster", "none"]
PRECEDENCE: tuple[Source, ...] = ("user", "cluster")
SCOPES: Mapping[str, tuple[Source, ...]] = {
    "none": (),
    "user": ("user",),
    "cluster": ("cluster",),
    "user_or_cluster": ("user", "cluster"),
}

# -- the process environment ----------------------------------------------------------------

_sealed: dict[str, str] | None = None


def is_key_variable(name: str, value: str = "") -> bool:
    """A variable that carries keys: a provider's, the key store's passphrase, the fleet
    link's secret, libpq's ``PGPASSWORD`` — or the registry URL when ``value`` holds a
    password."""
    if name == REGISTRY_VAR:
        return registry_password(value) is not None
    return name.startswith(INTEGRATION_PREFIX) or name in (
        INTEGRATIONS_VAR,
        PASSPHRASE_VAR,
        FLEET_SECRET_VAR,
        PGPASSWORD_VAR,
    )


def registry_password(url: str) -> str | None:
    """The password in a registry URL's userinfo (``postgresql://user:pw@host/db``), or in
    its ``password=`` query parameter; None when it has none."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        return None
    if parts.password:
        return urllib.parse.unquote(parts.password)
    found = urllib.parse.parse_qs(parts.query).get("password")
    return found[0] if found else None


def exec_without_keys() -> None:
    """Become this same program again with no key variable in its environment, their values
    handed over on an inherited file descriptor (a memfd: no file, no pipe to fill).

    ``/proc/<pid>/environ`` shows the environment a process was *executed* with; removing a
    variable later (``os.environ.pop``, ``unsetenv``) never rewrites it, so a key the keeper
    was started with would stay readable there by every process of the user — an agent's
    shell included. A new ``exec`` is the only way to a clean block. Nothing happens when no
    key variable is set (the usual start costs nothing)."""
    moved = {k: v for k, v in os.environ.items() if is_key_variable(k, v)}
    if not moved:
        return
    data = json.dumps(moved).encode("utf-8")
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("bay-keys", 0)
    else:  # pragma: no cover - not Linux: an unlinked private temporary file
        import tempfile

        with tempfile.TemporaryFile() as spill:
            fd = os.dup(spill.fileno())
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    os.set_inheritable(fd, True)
    env = {k: v for k, v in os.environ.items() if not is_key_variable(k, v)}
    env[KEYS_FD_VAR] = str(fd)
    argv = list(getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv])
    os.execve(sys.executable, argv, env)  # noqa: S606 - this same program, argv unchanged


def make_undumpable() -> bool:
    """Mark this process not dumpable (Linux ``PR_SET_DUMPABLE`` 0): its ``/proc/<pid>/``
    ``environ``, ``mem``, ``maps`` and ``fd`` are then closed to every process without
    ``CAP_SYS_PTRACE`` — the user's own included, so an agent's shell cannot read the keys the
    keeper holds — and it cannot be ptrace-attached or core-dumped. ``cmdline`` and ``stat``
    stay readable. An ``exec`` resets it: the keeper's children are ordinary. False where the
    OS has no such switch."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    pr_set_dumpable = 4
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(pr_set_dumpable, 0, 0, 0, 0)) == 0


def _handed_over(env: MutableMapping[str, str]) -> dict[str, str]:
    """The key variables :func:`exec_without_keys` handed over (its fd read, then closed)."""
    text = env.pop(KEYS_FD_VAR, None)
    if text is None:
        return {}
    try:
        fd = int(text)
        os.fstat(fd)
    except (ValueError, OSError):
        print(f"{KEYS_FD_VAR} names no open fd: ignored (never set it)", file=sys.stderr)
        return {}
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    found = json.loads(b"".join(chunks) or b"{}")
    return {str(k): str(v) for k, v in found.items() if is_key_variable(str(k), str(v))}


def hide_keys() -> None:
    """The keeper's first act: keys (``BAY_INTEGRATION_*``, ``BAY_INTEGRATIONS``,
    ``BAY_KEYS_PASSPHRASE``) out of its ``/proc`` environ block (:func:`exec_without_keys`),
    its ``/proc`` entry closed to the user's other processes (:func:`make_undumpable`), then
    the values into the private snapshot (:func:`seal_environment`). No child the keeper
    starts inherits them."""
    exec_without_keys()
    make_undumpable()
    seal_environment()


def seal_environment(environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Move every key variable out of ``environ`` (default: this process's environment, plus
    what :func:`exec_without_keys` handed over on its fd) into a private snapshot that
    :func:`key_environ` answers from. Returns the names moved. The keeper calls this before
    it starts anything, so nothing it hands on inherits them."""
    global _sealed
    env = os.environ if environ is None else environ
    handed = _handed_over(env) if environ is None else {}
    names = [name for name, value in env.items() if is_key_variable(name, value)]
    moved = {**handed, **{name: env.pop(name) for name in names}}
    _sealed = {**(_sealed or {}), **moved}
    for value in (
        moved.get(PASSPHRASE_VAR),
        moved.get(FLEET_SECRET_VAR),
        moved.get(PGPASSWORD_VAR),
        registry_password(moved.get(REGISTRY_VAR, "")),
    ):
        if value:
            scrub.remember(value)
    return sorted(moved)


def key_environ() -> dict[str, str]:
    """The key variables: the sealed snapshot once :func:`seal_environment` ran (in the
    keeper), else those in this process's environment."""
    if _sealed is not None:
        return dict(_sealed)
    return {k: v for k, v in os.environ.items() if is_key_variable(k, v)}


def registry_url() -> str:
    """``BAY_REGISTRY`` as the keeper was started with it: from the sealed snapshot when it
    carries a password (then it is in no environment the keeper hands on), else from the
    environment; ``""`` for the SQLite file.

    In a sealed process (the keeper), a ``PGPASSWORD`` it was started with is in no
    environment any more, libpq's included: a URL without a password of its own then
    carries it as its ``password`` parameter, so every registry connection the keeper makes
    (its pool, its lock, its listener) still sends it. Elsewhere (``bay doctor``) libpq
    reads the variable itself."""
    keys = key_environ()
    url = keys.get(REGISTRY_VAR) or os.environ.get(REGISTRY_VAR, "")
    password = keys.get(PGPASSWORD_VAR) if _sealed is not None else None
    if url and password and registry_password(url) is None:
        return with_registry_password(url, password)
    return url


def with_registry_password(url: str, password: str) -> str:
    """``url`` (a ``postgresql://`` one) with ``password`` as its ``password`` query
    parameter; any other text unchanged (it is refused as a registry URL anyway)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        return url
    # Appended to the query as written (re-encoding it would change what the user wrote).
    added = "password=" + urllib.parse.quote(password, safe="")
    query = f"{parts.query}&{added}" if parts.query else added
    return urllib.parse.urlunsplit(parts._replace(query=query))


# -- storage every keeper mounts ---------------------------------------------------------------

_shared: tuple[Path, ...] = ()


class KeysOnSharedStorage(ValueError):
    """A key store's place is on storage other keepers mount; the message says what to do."""


def share_roots(*roots: Path) -> None:
    """Declare the directories every keeper of the fleet mounts (``BAY_FLEET_DATA``): no key
    store of this keeper may live under them (:func:`check_not_shared`). The keeper calls it
    once at its start."""
    global _shared
    _shared = tuple(Path(os.path.realpath(r)) for r in roots)


def check_not_shared(directory: Path) -> None:
    """Raise :class:`KeysOnSharedStorage` when ``directory`` (a key store's) is under a
    shared root: another keeper mounting it would read this machine's keys (an encrypted
    file and the key file beside it alike)."""
    if not _shared:
        return
    real = Path(os.path.realpath(directory))
    for root in _shared:
        if real.is_relative_to(root):
            raise KeysOnSharedStorage(
                f"{directory} is under BAY_FLEET_DATA ({root}), which every keeper of the "
                "fleet mounts: keys never go there; give this keeper a BAY_HOME on its own "
                "disk, or BAY_FLEET_DATA a directory outside it"
            )


class FleetSecretError(ValueError):
    """The fleet secret cannot be read; the message says how to fix it (never its value)."""


def fleet_secret(environ: Mapping[str, str] | None = None) -> Secret | None:
    """The fleet link's shared secret: ``BAY_FLEET_SECRET`` from the sealed snapshot, else
    the contents of the file ``BAY_FLEET_SECRET_FILE`` names (its surrounding whitespace
    dropped) — a regular file of this user that no one else may read (as ``keys.key``).
    None when neither is set (the keeper has no fleet link). Blocking (a file read): the
    keeper calls it in a worker thread or before its loop."""
    env = os.environ if environ is None else environ
    value = key_environ().get(FLEET_SECRET_VAR, "") if environ is None else ""
    value = value or env.get(FLEET_SECRET_VAR, "")
    where = FLEET_SECRET_VAR
    path = env.get(FLEET_SECRET_FILE_VAR, "")
    if not value and path:
        value, where = _secret_file(Path(path)), f"{FLEET_SECRET_FILE_VAR} ({path})"
    if not value:
        return None
    if len(value) < MIN_FLEET_SECRET:
        raise FleetSecretError(
            f"{where} holds {len(value)} characters, fewer than {MIN_FLEET_SECRET}: make it "
            "with `openssl rand -hex 32 > FILE` and give every keeper of the fleet the same"
        )
    scrub.remember(value)
    return Secret(value)


def _secret_file(path: Path) -> str:
    fix = f"chmod 600 {path} (owned by the keeper's user), or name another file"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise FleetSecretError(
            f"{FLEET_SECRET_FILE_VAR} {path} cannot be read ({exc.strerror or exc}): {fix}"
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FleetSecretError(f"{FLEET_SECRET_FILE_VAR} {path} is not a regular file")
        if st.st_mode & 0o077 or st.st_uid != os.getuid():
            raise FleetSecretError(
                f"{FLEET_SECRET_FILE_VAR} {path} may be read by others "
                f"(mode {stat.S_IMODE(st.st_mode):o}, uid {st.st_uid}): {fix}"
            )
        data = os.read(fd, MAX_VALUE + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_VALUE:
        raise FleetSecretError(f"{FLEET_SECRET_FILE_VAR} {path} is over {MAX_VALUE} bytes")
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise FleetSecretError(f"{FLEET_SECRET_FILE_VAR} {path} is not UTF-8 text") from None


def env_name(integration_id: str, field: str) -> str:
    """``BAY_INTEGRATION_<ID>_<FIELD>``: the id and field upper-cased, ``:`` and ``-`` as
    ``_`` (``cloud:browser-use`` + ``api_key`` → ``BAY_INTEGRATION_CLOUD_BROWSER_USE_API_KEY``)."""
    return INTEGRATION_PREFIX + _word(integration_id) + "_" + _word(field)


def _word(text: str) -> str:
    return re.sub(r"[:\-]", "_", text).upper()


# -- secrets and their views ------------------------------------------------------------------


@dataclass(frozen=True)
class Masked:
    """A view of a secret: ``••••`` and, for a long enough value, its last 4 characters.
    Made from a :class:`Secret`; it holds nothing else of the value."""

    text: str

    @classmethod
    def of(cls, secret: Secret) -> Masked:
        value = secret.reveal()
        return cls(MASK + (value[-4:] if len(value) >= MIN_TAIL_LENGTH else ""))

    def __str__(self) -> str:
        return self.text


class Secret:
    """A key's value. Masked in repr/str, not JSON-encodable, not picklable: an accident
    (a log line, an answer, a registry row) shows ``Secret(••••abcd)`` or fails loudly."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def reveal(self) -> str:
        """The plaintext. Only for a provider child's environment and a key test."""
        return self._value

    def masked(self) -> Masked:
        return Masked.of(self)

    def __repr__(self) -> str:
        return f"Secret({self.masked()})"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("a Secret cannot be pickled")


# -- resolution ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Resolution:
    """What :meth:`KeyBook.resolve` answers for one integration."""

    integration: str
    source: Source
    """``user`` (one of the user's own stores), ``cluster`` (a cluster default) or ``none``."""
    values: Mapping[str, Secret]
    """field -> value, row defaults included."""
    origin: Mapping[str, str]
    """field -> the key source's name, or ``default``."""
    missing: tuple[str, ...]
    """Required fields with no value."""
    problems: tuple[str, ...] = ()
    """Sources that failed to answer, each with its fix. A failing user store stops the
    resolution there (``none``): a cluster default is never used in its place silently."""
    pins: Mapping[str, str] = _field(default_factory=dict)
    """URL field -> the origin (``scheme://host[:port]``) the user's key was stored for, as
    that store recorded it when the key was set (:func:`check_pins`)."""


# -- where a key may go: pins ------------------------------------------------------------------

PIN_SUFFIX = "@pinned"
"""A user store keeps, next to a secret, the origin of each URL field it was stored with,
under the pseudo-field ``<url field>@pinned`` (sealed like any value of that store)."""


def url_fields(row: IntegrationRow) -> list[KeyField]:
    """The fields holding a URL a key is sent to: flagged ``url``, or named by the exchange."""
    named = row.exchange.url_field if row.exchange is not None else None
    return [f for f in row.fields if f.url or f.name == named]


def origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, lower-cased, the scheme's default port dropped:
    what a pin compares. ``""`` for a value that is not an http(s) URL with a host."""
    parts = urllib.parse.urlsplit(url.strip())
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        return ""
    if scheme not in ("http", "https") or not parts.hostname:
        return ""
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    if port is not None and port != {"http": 80, "https": 443}[scheme]:
        host += f":{port}"
    return f"{scheme}://{host}"


def check_pins(row: IntegrationRow, res: Resolution) -> None:
    """Refuse ``key_host_mismatch`` when the user's key would go to a host it was not stored
    for: each URL field's origin must be the one pinned when the key was set, or — for a key
    stored without a pin — the field's documented default. A cluster default's URL and key
    both come from the operator's environment, set together at the keeper's start: no pin."""
    if res.source != "user":
        return
    secret = next((f.name for f in row.fields if f.secret and f.name in res.values), None)
    if secret is None:
        return
    for f in url_fields(row):
        value = res.values.get(f.name)
        if value is None:
            continue
        pinned = res.pins.get(f.name) or (origin(f.default) if f.default else "")
        host = origin(value.reveal())
        if not pinned or host != pinned:
            raise Refusal(
                "key_host_mismatch",
                integration=row.id,
                field=f.name,
                secret=secret,
                host=_clip(host or "(not a URL)"),
                pinned=pinned or "no host",
            )


def check_stored_option(name: str, value: str) -> None:
    """Refuse ``option_carries_key`` for a provider option (``--cdp-url``) that carries a
    credential — a URL's userinfo, or a query or fragment parameter whose name says it holds
    one (:func:`browserbay.scrub.scrub_url`'s rule). Options are a registry row: in a fleet
    every keeper reads it, so a key in it would leave the machine that holds it. The
    refusal names which part, never its value."""
    if "://" not in value:
        return
    parts = urllib.parse.urlsplit(value.strip())
    part = ""
    if "@" in parts.netloc:
        part = "the user:password before its host"
    else:
        for where, text in (("query", parts.query), ("fragment", parts.fragment)):
            for pair in text.split("&"):
                param, eq, given = pair.partition("=")
                if eq and given and scrub.credential_name(urllib.parse.unquote_plus(param)):
                    part = f"its {where} parameter {_clip(param, 40)}"
                    break
            if part:
                break
    if part:
        raise Refusal("option_carries_key", option=name.replace("_", "-"), part=part)


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + f"…(+{len(text) - limit})"


def check_value(row: IntegrationRow, field: KeyField, value: str) -> None:
    """Refuse a value that cannot be right (``key_invalid``), without echoing it."""
    expected = field.help or (f"matching {field.pattern}" if field.pattern else "a value")
    reason = None
    if not value:
        reason = "it is empty"
    elif len(value) > MAX_VALUE:
        reason = f"it is {len(value)} characters long (at most {MAX_VALUE})"
    elif any(c.isspace() for c in value) and field.secret:
        reason = "it contains whitespace (a stray newline or space from copying?)"
    elif field.pattern and re.fullmatch(field.pattern, value) is None:
        reason = "it does not have the expected shape (see the way out)"
    if reason is not None:
        raise Refusal(
            "key_invalid", integration=row.id, field=field.name, reason=reason, expected=expected
        )


class KeyBook:
    """The integrations and key sources of one plugin manager, composed."""

    def __init__(
        self, sources: Mapping[str, KeySource], integrations: Mapping[str, IntegrationRow]
    ):
        self.sources = sources
        self.integrations = integrations

    # -- lookups ------------------------------------------------------------------------------

    def row(self, integration_id: str) -> IntegrationRow:
        row = self.integrations.get(integration_id)
        if row is None:
            known = ", ".join(sorted(self.integrations)) or "none installed"
            raise Refusal(
                "usage",
                detail=f"no integration {integration_id!r} (known: {known}); bay keys list",
                verb="keys",
            )
        return row

    def field(self, row: IntegrationRow, name: str) -> KeyField:
        for f in row.fields:
            if f.name == name:
                return f
        names = ", ".join(f.name for f in row.fields)
        raise Refusal(
            "usage", detail=f"{row.id} has no field {name!r} (its fields: {names})", verb="keys"
        )

    def ordered(self, precedence: str | None = None) -> list[KeySource]:
        rank = {"user": 0, "cluster": 1}
        found = [s for s in self.sources.values() if precedence in (None, s.precedence)]
        return sorted(found, key=lambda s: (rank.get(s.precedence, 2), s.order, s.name))

    @staticmethod
    def unavailable(source: KeySource) -> str | None:
        if source.probe is None:
            return None
        try:
            return source.probe()
        except Exception as exc:  # a probe that fails is an unavailable source
            return f"its probe failed: {type(exc).__name__}"

    def source_rows(self) -> list[dict[str, Any]]:
        rows = []
        for s in self.ordered():
            problem = self.unavailable(s)
            rows.append(
                {
                    "name": s.name,
                    "precedence": s.precedence,
                    "writable": s.set is not None,
                    "available": problem is None,
                    "problem": problem,
                    "protection": _protection(s),
                }
            )
        return rows

    # -- resolve ------------------------------------------------------------------------------

    def resolve(
        self, integration_id: str, accept: Collection[Source] = ("user", "cluster")
    ) -> Resolution:
        """The values of one integration from the highest-precedence source that holds any:
        the user's own > the cluster default > none. ``accept`` narrows which precedences
        count (a provider's ``key_scope``). Blocking (a keychain is a D-Bus round trip): the
        keeper calls it in a worker thread."""
        row = self.row(integration_id)
        problems: list[str] = []
        for precedence in PRECEDENCE:
            if precedence not in accept:
                continue
            for source in self.ordered(precedence):
                if self.unavailable(source) is not None:
                    continue
                try:
                    found = _read(source, row)
                except Exception as exc:
                    problems.append(f"the {source.name} key store failed: {_reason(exc)}")
                    continue
                if found:
                    pins = _pins(source, row) if precedence == "user" else {}
                    return _resolution(row, precedence, found, source.name, problems, pins)
            if problems and precedence == "user":
                break  # never fall to a cluster default past a user store that failed
        return _resolution(row, "none", {}, "", problems)

    # -- writes -------------------------------------------------------------------------------

    def store_for(self, integration_id: str) -> KeySource:
        """Where ``bay keys set`` writes: ``BAY_KEYS_STORE`` when set, else the user store
        already holding this integration's values, else the first available one."""
        writable = [s for s in self.ordered("user") if s.set is not None]
        wanted = os.environ.get(STORE_VAR, "")
        if wanted:
            chosen = [s for s in writable if s.name == wanted]
            if not chosen:
                names = ", ".join(s.name for s in writable) or "none installed"
                raise Refusal(
                    "key_store_unavailable",
                    reason=f"BAY_KEYS_STORE names {wanted!r}, which is not a writable store "
                    f"(installed: {names})",
                    fix="unset BAY_KEYS_STORE, or name one of the installed stores",
                )
            problem = self.unavailable(chosen[0])
            if problem:
                raise Refusal(
                    "key_store_unavailable",
                    reason=f"{wanted} (chosen by BAY_KEYS_STORE) cannot work here: {problem}",
                    fix="unset BAY_KEYS_STORE, or fix that store",
                )
            return chosen[0]
        available = [s for s in writable if self.unavailable(s) is None]
        row = self.row(integration_id)
        for source in available:
            try:
                if _read(source, row):
                    return source
            except Exception:  # noqa: S112 - a failing store is simply not the holder
                continue
        if not available:
            why = "; ".join(f"{s.name}: {self.unavailable(s)}" for s in writable)
            raise Refusal(
                "key_store_unavailable",
                reason=why or "no user key store plugin is installed",
                fix=f"{DISTRIBUTIONS['browserbay-keys-file'].install_hint()}   "
                "(browserbay-keys-file: an encrypted file; no keychain needed)",
            )
        return available[0]

    def set(self, integration_id: str, field_name: str, value: str) -> KeyStored:
        """Validate and store one field in the user's store.

        A key is only ever sent to the host it was stored for. Storing a secret pins it to
        the origin of each URL field as it resolves from that store now (its value, or the
        documented default). Storing a URL field on another origin while the store holds a
        secret **drops the secret first** (and its pins): the user gives the key again for
        the new host. Dropping, not refusing: whoever may run ``bay keys`` may already
        ``bay keys clear``, so it takes nothing an agent could not take, and the key is gone
        before the new URL is written (a crash in between leaves no key next to it)."""
        row = self.row(integration_id)
        field = self.field(row, field_name)
        check_value(row, field, value)
        if field.secret:
            scrub.remember(value)
        source = self.store_for(integration_id)
        assert source.set is not None
        cleared: list[str] = []
        pinned: str | None = None
        try:
            held = _read(source, row)
            urls = url_fields(row)
            if field.secret:
                for u in urls:
                    where = origin(held.get(u.name) or u.default or "")
                    if where:
                        source.set(row.id, u.name + PIN_SUFFIX, where)
                        pinned = pinned or where
            elif field in urls:
                pins = _pins(source, row)
                before = pins.get(field.name) or origin(held.get(field.name) or field.default or "")
                secrets = [f.name for f in row.fields if f.secret and f.name in held]
                if secrets and origin(value) != before:
                    if source.delete is None:
                        raise RuntimeError(f"it cannot drop the key that {field.name} guards")
                    for name in [*secrets, *(u.name + PIN_SUFFIX for u in urls)]:
                        source.delete(row.id, name)
                    cleared = secrets
            source.set(row.id, field.name, value)
        except Exception as exc:
            raise Refusal(
                "key_store_unavailable",
                reason=f"the {source.name} key store failed: {_reason(exc)}",
                fix="bay keys list   (shows each store and its problem)",
            ) from None
        shown = str(Secret(value).masked()) if field.secret else value
        return KeyStored(source.name, shown, tuple(cleared), pinned)

    def clear(self, integration_id: str) -> list[str]:
        """Drop the user's values of one integration from every user store that holds any;
        precedence then lands where it lands (the cluster default, or none)."""
        row = self.row(integration_id)
        cleared = []
        for source in self.ordered("user"):
            if source.delete is None or self.unavailable(source) is not None:
                continue
            try:
                held = _read(source, row)
                for name in [*held, *(f"{name}{PIN_SUFFIX}" for name in _pins(source, row))]:
                    source.delete(row.id, name)
            except Exception as exc:
                raise Refusal(
                    "key_store_unavailable",
                    reason=f"the {source.name} key store failed: {_reason(exc)}",
                    fix="bay keys list   (shows each store and its problem)",
                ) from None
            if held:
                cleared.append(source.name)
        return cleared

    # -- the one reveal into an environment ---------------------------------------------------

    def child_env(self, provider: ProviderRow) -> dict[str, str]:
        """The environment entries of the one provider child that needs a key, under the
        vendor's own variable names — resolved now, at launch, once. Refuses
        ``provider_needs_local_key`` (a remote host) before resolving anything, and
        ``backend_no_key`` when a required field has no value: never a silent fallback."""
        return self.launch_keys(provider)[0]

    def launch_keys(self, provider: ProviderRow) -> tuple[dict[str, str], Source]:
        """:meth:`child_env` and where its values came from (``user``, ``cluster``, ``none``)."""
        caps = provider.capabilities
        accept = SCOPES.get(caps.key_scope, ())
        if caps.key_scope == "none":
            return {}, "none"
        if caps.remote_host:
            raise Refusal(
                "provider_needs_local_key",
                provider=provider.id,
                where="would have to leave this machine (its browsers run on another one)",
                fix="use a provider that runs here (bay plugins lists them), or one that "
                "needs no key",
            )
        row = self.integrations.get(provider.id)
        if row is None:
            raise Refusal(
                "backend_unavailable",
                provider=provider.id,
                reason=f"it needs keys, but no installed plugin declares the integration "
                f"{provider.id!r}",
                fix=f"reinstall the plugin that provides {provider.id} (bay plugins)",
            )
        res = self.resolve(row.id, accept)
        check_pins(row, res)
        if res.missing:
            raise Refusal(
                "backend_no_key",
                provider=provider.id,
                integration=row.id,
                field=res.missing[0],
                missing=list(res.missing),
                source=res.source,
                reason=_no_key_reason(res, accept),
            )
        env = {row.vendor_env[f]: v.reveal() for f, v in res.values.items() if f in row.vendor_env}
        return env, res.source

    # -- masked views -------------------------------------------------------------------------

    def view(self, res: Resolution) -> dict[str, Any]:
        """A masked view of one resolution: every secret field as ``••••`` + last 4."""
        row = self.row(res.integration)
        fields = []
        for f in row.fields:
            value = res.values.get(f.name)
            shown: str | None = None
            if value is not None:
                shown = str(value.masked()) if f.secret else value.reveal()
            fields.append(
                {
                    "name": f.name,
                    "secret": f.secret,
                    "required": f.required,
                    "set": value is not None,
                    "view": shown,
                    "from": res.origin.get(f.name),
                    "vendor_env": row.vendor_env.get(f.name),
                    "pinned": res.pins.get(f.name),
                    "cluster_env": env_name(row.id, f.name),
                }
            )
        return {
            "id": row.id,
            "summary": row.summary,
            "source": res.source,
            "missing": list(res.missing),
            "problems": list(res.problems),
            "test_kind": row.test_kind,
            "fields": fields,
        }


def _protection(source: KeySource) -> str | None:
    if source.protection is None:
        return None
    try:
        return source.protection()
    except Exception as exc:  # a store that cannot say is not a reason to fail the listing
        return f"unknown ({_reason(exc)})"


def _read(source: KeySource, row: IntegrationRow) -> dict[str, str]:
    found = {}
    for f in row.fields:
        value = source.get(row.id, f.name)
        if value:
            found[f.name] = value
    return found


def _pins(source: KeySource, row: IntegrationRow) -> dict[str, str]:
    found = {}
    for f in url_fields(row):
        value = source.get(row.id, f.name + PIN_SUFFIX)
        if value:
            found[f.name] = value
    return found


def _resolution(
    row: IntegrationRow,
    source: Source,
    found: Mapping[str, str],
    source_name: str,
    problems: Iterable[str],
    pins: Mapping[str, str] | None = None,
) -> Resolution:
    values = {name: Secret(v) for name, v in found.items()}
    for f in row.fields:
        if f.secret and f.name in found:
            scrub.remember(found[f.name])  # from now on blotted out of all that leaves
    origins = dict.fromkeys(found, source_name)
    for f in row.fields:
        if f.name not in values and f.default:
            values[f.name] = Secret(f.default)
            origins[f.name] = "default"
    missing = tuple(f.name for f in row.fields if f.required and f.name not in values)
    return Resolution(
        row.id, source, values, origins, missing, tuple(problems), MappingProxyType(pins or {})
    )


def _no_key_reason(res: Resolution, accept: Collection[Source]) -> str:
    if res.problems:
        return "; ".join(res.problems)
    if res.source != "none":
        return f"the {res.source} values lack it"
    if tuple(accept) == ("user",):
        return "it takes only your own key, and you have not set one"
    if tuple(accept) == ("cluster",):
        return "it takes only a cluster default, and the cluster sets none"
    return "no key of yours and no cluster default"


def _reason(exc: BaseException) -> str:
    """An exception's message, cut short: sources word them with the fix, never a value."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]


#: Runs an integration's key test on resolved values (:func:`browserbay.keytest.run_test`).
KeyTester = Callable[[IntegrationRow, Resolution], KeyVerdict]


class BookAdmin:
    """The core's :class:`browserbay.model.KeyAdmin` over a :class:`KeyBook`: what a plugin
    verb gets as ``ctx.keys``. Nothing here returns a plaintext key. The key test runner is
    given (it is built on this module's resolutions: :mod:`browserbay.keytest`)."""

    def __init__(self, book: KeyBook, tester: KeyTester):
        self._book = book
        self._tester = tester

    def ids(self) -> list[str]:
        return sorted(self._book.integrations)

    def sources(self) -> list[dict[str, Any]]:
        return self._book.source_rows()

    def view(self, integration_id: str) -> dict[str, Any]:
        return self._book.view(self._book.resolve(integration_id))

    def set(self, integration_id: str, field: str, value: str) -> KeyStored:
        return self._book.set(integration_id, field, value)

    def clear(self, integration_id: str) -> list[str]:
        return self._book.clear(integration_id)

    def test(self, integration_id: str) -> KeyVerdict:
        row = self._book.row(integration_id)
        return self._tester(row, self._book.resolve(integration_id))
