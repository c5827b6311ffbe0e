"""The data that plugins hand to the core and the core hands to hooks.

Everything here is a frozen dataclass: rows are data (capabilities are cells, read before
acting), never behaviour hidden behind ``if provider == ...``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from browserbay.paths import BayPaths
from browserbay.progress import say_progress
from browserbay.verbs import Verb

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Page, Playwright

Tier = Literal[1, 2, 3]
KeyScope = Literal["none", "user", "cluster", "user_or_cluster"]
LeaseKind = Literal["tab", "window", "browser"]
InputHolder = Literal["agent", "user"]


@dataclass(frozen=True)
class Capabilities:
    """The capability cells of a provider. A verb lists the cells it needs (see
    :mod:`browserbay.verbs`); the keeper refuses it by name when a cell is false."""

    has_cdp: bool = True
    """Pages are driven over CDP (Playwright): every page verb works."""
    owns_dir: bool = True
    """The keeper owns the browser's user-data-dir (false for somebody else's browser)."""
    ephemeral_contexts: bool = True
    """Isolated sessions can be separate contexts inside one shared browser process."""
    screenshots: bool = True
    key_scope: KeyScope = "none"
    """Which key the provider needs, if any (see the key hooks)."""
    can_switch_to: tuple[str, ...] = ()
    """Provider ids a profile on this provider can switch its backend to and from (``bay
    backend <provider>``): the two open the same kind of user-data-dir. A pair can switch
    when either row names the other, so a new provider declares the ones whose directories
    it can open without their plugins knowing it."""
    lease_kind: LeaseKind = "tab"
    headed: bool = False
    """Runs with a visible window by default."""
    allowed_domains: bool = True
    """Can enforce a profile's allowed-domains list."""
    remote_host: bool = False
    """Its browsers run on another machine (a paired device, a remote keeper). Keys never
    leave this machine, so a provider with a ``key_scope`` other than ``none`` that is also
    ``remote_host`` is refused ``provider_needs_local_key`` before anything is resolved."""
    cdp_endpoint: bool = False
    """The keeper reaches its browsers at a CDP URL (somebody else's browser, a vendor's),
    not over a pipe: a session-scoped CDP endpoint (``bay cdp-url``, ``bay run``) can be
    served for a lease on it. Its handles carry that URL as ``cdp_url``."""
    provider_view: bool = False
    """Its browsers come with the vendor's own live viewer (a URL per session, a
    ``provider-view`` live-view target): ``bay live`` starts the browser and answers that URL
    (its handles carry it as ``live_view_url``) instead of a CDP-screencast link."""

    def cell(self, name: str) -> bool:
        value = getattr(self, name, None)
        if isinstance(value, bool):
            return value
        raise KeyError(f"no boolean capability cell named {name!r}")

    def as_row(self) -> dict[str, Any]:
        return {
            "has_cdp": self.has_cdp,
            "owns_dir": self.owns_dir,
            "ephemeral_contexts": self.ephemeral_contexts,
            "screenshots": self.screenshots,
            "key_scope": self.key_scope,
            "can_switch_to": list(self.can_switch_to),
            "lease_kind": self.lease_kind,
            "headed": self.headed,
            "allowed_domains": self.allowed_domains,
            "remote_host": self.remote_host,
            "cdp_endpoint": self.cdp_endpoint,
            "provider_view": self.provider_view,
        }


@dataclass(frozen=True)
class LaunchSpec:
    """What the keeper asks a driver to start."""

    browser_id: str
    """Minted by the keeper (``bb-<8 hex>``); names the browser in the registry and logs."""
    home: Path
    """A private directory (0700) the browser uses as HOME and XDG base: it writes nothing
    into the user's own directories."""
    user_data_dir: Path | None = None
    """None: an ephemeral browser whose contexts are isolated sessions."""
    headless: bool = True
    proxy: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment for the browser process only (e.g. a licence key): never argv."""
    options: Mapping[str, str] = field(default_factory=dict)
    """The profile's provider options (``cdp_url`` for the ``cdp`` provider), as
    ``ProviderRow.check_options`` accepted them at ``bay new``."""
    key_source: str = "none"
    """Where the key in ``env`` came from: ``user`` (the user's own), ``cluster`` (a cluster
    default, whose seats other machines share) or ``none``. Never the key itself."""


class BrowserHandle(Protocol):
    """A running browser the keeper owns, as a driver hands it back.

    Its optional capabilities are attributes every handle declares, None when it has not
    got them (the keeper reads them, it never probes for them): a handle class may subclass
    this protocol to inherit those None defaults."""

    browser_id: str
    pid: int | None
    browser: Browser | None
    """The Playwright browser, when sessions get their own contexts in it."""
    persistent_context: BrowserContext | None
    """The one context of a persistent user-data-dir, when there is one."""
    cdp_url: str | None = None
    """The browser's own CDP endpoint (a ``ws://`` URL), for providers with the
    ``cdp_endpoint`` cell."""
    live_view_url: str | None = None
    """The vendor's own live viewer of this browser, for providers with the
    ``provider_view`` cell."""
    context_options: Mapping[str, Any] | None = None
    """What every session's context in this browser is made with (see
    :func:`context_options`)."""

    async def close(self, timeout: float) -> None:
        """Close gracefully (CDP ``Browser.close``) within ``timeout`` seconds. Never SIGKILL a
        browser that holds a profile: it would lose its newest cookies."""


def context_options(handle: BrowserHandle) -> dict[str, Any]:
    """The keyword arguments of Playwright's ``browser.new_context`` that a handle asks for
    every session's context in its browser: its ``context_options`` mapping (a device to
    emulate: ``viewport``, ``user_agent``, ``device_scale_factor``, ``is_mobile``,
    ``has_touch``, as in ``playwright.devices[...]``). Empty when it has none."""
    return dict(handle.context_options or {})


class Driver(Protocol):
    """What a provider row's ``driver_factory`` returns."""

    async def launch(self, playwright: Playwright, spec: LaunchSpec) -> BrowserHandle:
        """Start a browser. Raise :class:`browserbay.refusals.Refusal` with
        ``backend_unavailable`` (and the install command as ``fix``) when it cannot."""
        ...


@dataclass(frozen=True)
class ProviderRow:
    """One provider, as contributed by :func:`browserbay.hookspecs.bay_providers`."""

    id: str
    tier: Tier
    summary: str
    capabilities: Capabilities
    driver_factory: Callable[[], Driver] | None
    """None when the provider is declared but not runnable yet (see ``not_runnable``)."""
    not_runnable: str | None = None
    """Why the provider cannot run here, worded for the user; None when it can."""
    probe: Callable[[], str | None] | None = None
    """A cheap check of the machine (binary found? vendor reachable?) returning a reason it
    cannot run, or None. ``bay plugins`` and ``bay status`` show it."""
    options: tuple[str, ...] = ()
    """The ``bay new`` options a profile on this provider takes (``cdp_url``); another is
    refused ``usage``."""
    check_options: Callable[[Mapping[str, str]], dict[str, str]] | None = None
    """Called (in a worker thread) by ``bay new`` with the options given: answers the options
    to store, or raises a :class:`~browserbay.refusals.Refusal` (a missing or unreachable
    ``--cdp-url``). It may add options of its own that are minted once and kept (the cloak
    provider's fingerprint ``seed``); given options it answered before, it answers them
    unchanged. A backend switch to this provider calls it with the profile's stored options:
    whatever the profile already holds is kept as it was (a switch never re-mints)."""
    browser_major: Callable[[], int | None] | None = None
    """The Chromium major of the browser this provider would launch now (its binary's
    ``--version``; see :func:`browserbay.ladder.binary_major`), or None when it cannot tell.
    Called in a worker thread by the version ladder of ``bay backend <provider>``."""
    install: Callable[[Installer], str] | None = None
    """What ``bay provider install <id>`` runs (in a worker thread): fetch and verify the
    provider's binary, reporting progress through the :class:`Installer`; answers a line
    saying what was installed where, or raises a :class:`~browserbay.refusals.Refusal`
    (``install_failed``) having left nothing installed. None: nothing to install."""


@dataclass(frozen=True)
class Installer:
    """What a provider's ``install`` gets: a progress line sink and the verb's deadline."""

    say: Callable[[str], None]
    """A progress line for the user (``[#####.....] 50% 108/217 MB``), sent as it happens."""
    deadline: float
    """``time.monotonic()`` by which it must have finished (or stopped, leaving nothing)."""


@dataclass(frozen=True)
class TierRow:
    """One rung of the access-tier ladder."""

    tier: Tier
    name: str
    summary: str


@dataclass(frozen=True)
class Failure:
    """What a verb met, handed to :func:`browserbay.hookspecs.bay_tier_hint`."""

    url: str
    status: int | None
    title: str | None
    provider: str
    tier: Tier


@dataclass(frozen=True)
class TierHint:
    """A hint that another tier might fare better. Worded as a hint, never a detection."""

    message: str
    suggest_tier: Tier | None = None


@dataclass(frozen=True)
class SiteHint:
    """A claim that a site needs another rung of the ladder: ``{host, tier, backend, by, at,
    why}``. It records who said so (an agent's session through ``bay blocked``), when and
    why; it never changes a profile. ``tier`` is legal only while ``backend`` is empty: a
    provider sits on exactly one tier, so once ``backend`` names one its tier is derived
    from the provider's row, never stored twice."""

    host: str
    """The exact host (no registrable-domain guessing: two subdomains are two hosts)."""
    tier: Tier | None
    backend: str | None
    by: str
    at: float
    why: str

    def __post_init__(self) -> None:
        from browserbay.refusals import Refusal

        if self.tier is not None and self.backend:
            raise Refusal(
                "usage",
                detail=f"a site hint names a tier only while it names no backend: "
                f"{self.backend!r} already sits on its own tier (give --tier or --backend, "
                "not both)",
                verb="blocked",
            )
        if self.tier is not None and self.tier not in (1, 2, 3):
            raise Refusal("usage", detail="--tier is 1, 2 or 3", verb="blocked")
        if not self.host or self.host != self.host.strip().lower():
            raise Refusal("usage", detail=f"{self.host!r} is not a host name", verb="blocked")


@dataclass(frozen=True)
class TransportRow:
    """A live-view transport: how frames of a target reach a human's page."""

    kind: str
    summary: str
    target_kinds: tuple[str, ...]
    """Which targets it can show (``tab``, ``window``, ``provider-view``)."""
    factory: Callable[[LiveHost], LiveTransport] | None = None
    """Called once by the keeper at its start with the :class:`LiveHost`; the transport it
    returns is stopped (``await transport.stop()``) before the keeper's browsers close."""


@dataclass(frozen=True)
class KeyField:
    """One field of an integration's key: ``name`` is snake_case (it becomes the
    ``<FIELD>`` of ``BAY_INTEGRATION_<ID>_<FIELD>``)."""

    name: str
    secret: bool
    required: bool = True
    pattern: str | None = None
    """A regular expression a value must match (shape check, no network)."""
    default: str | None = None
    """The value used when no source holds one (a vendor's documented API URL). Never a
    secret."""
    help: str = ""
    """What the value is and where the user finds it, for ``bay keys list`` and errors."""
    url: bool = False
    """A URL the key is sent to (a vendor's API base). The field an integration's
    ``exchange`` names counts as one without it. A secret is pinned to the host of every URL
    field when it is stored, and is never sent elsewhere (:mod:`browserbay.keys`)."""


@dataclass(frozen=True)
class Exchange:
    """How an integration's key test reaches the vendor: ONE bounded read-only GET to
    ``<value of url_field> + path``. The host comes from the row's own field (or its
    default), never from a constant elsewhere; ``headers`` and ``query`` are templates
    filled from the resolved fields (``{"X-Api-Key": "{api_key}"}``)."""

    url_field: str
    path: str = "/"
    headers: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class IntegrationRow:
    """A thing that needs keys: a provider's licence, a cloud vendor's API key."""

    id: str
    fields: tuple[KeyField, ...]
    vendor_env: Mapping[str, str]
    """field name -> the vendor's own environment variable name, set only in the one child
    process that needs it."""
    test_kind: Literal["shape-only", "credential-exchange", "reachability"] = "shape-only"
    """``shape-only``: no network, the fields' patterns. ``credential-exchange``: one
    request carrying the key to the host derived from ``exchange``. ``reachability``: one
    request without the key to that host."""
    exchange: Exchange | None = None
    """Where the network tests go (required for the two network kinds)."""
    summary: str = ""


KeyPrecedence = Literal["user", "cluster"]


@dataclass(frozen=True)
class KeySource:
    """A place keys come from. Precedence is always user > cluster > none."""

    name: str
    precedence: KeyPrecedence
    get: Callable[[str, str], str | None]
    """``get(integration_id, field) -> value or None``. Raise an exception whose message
    says how to fix the source (never containing a value) when it cannot answer."""
    set: Callable[[str, str, str], None] | None = None
    """``set(integration_id, field, value)``: a writable (user) source stores a value."""
    delete: Callable[[str, str], None] | None = None
    """``delete(integration_id, field)``: drop a value; no error when there is none."""
    probe: Callable[[], str | None] | None = None
    """A cheap check: the reason this source cannot work here (no keychain), or None."""
    order: int = 100
    """Among sources of one precedence, lower is asked first and written first."""
    protection: Callable[[], str] | None = None
    """What holds a stored value against whom, one line for ``bay keys list`` (``key file
    beside it: …``, ``passphrase: …``). None: not said."""


@dataclass(frozen=True)
class KeyStored:
    """What ``bay keys set`` did: the store, a view of the value (masked for a secret), the
    secrets it dropped (a URL field moved to another host) and the origin a secret is now
    pinned to."""

    store: str
    view: str
    cleared: tuple[str, ...] = ()
    pinned: str | None = None


@dataclass(frozen=True)
class KeyVerdict:
    """The outcome of one key test (:mod:`browserbay.keytest`). ``fix`` says what to run
    when it failed."""

    integration: str
    kind: str
    ok: bool
    detail: str
    host: str | None
    at: float
    fix: str = ""

    def as_row(self) -> dict[str, Any]:
        return {
            "integration": self.integration,
            "kind": self.kind,
            "ok": self.ok,
            "detail": self.detail,
            "host": self.host,
            "at": self.at,
            "fix": self.fix,
        }


class KeyAdmin(Protocol):
    """What a plugin verb gets as ``ctx.keys`` (``bay keys`` is built on it): masked views,
    writes and tests of the keys. Nothing here returns a plaintext key. The core's
    implementation is :class:`browserbay.keys.BookAdmin`; each call may block (a keychain, a
    test's one request): run it in a worker thread."""

    def ids(self) -> list[str]:
        """The installed integrations' ids, sorted."""
        ...

    def sources(self) -> list[dict[str, Any]]:
        """The key sources: name, precedence, availability (and why not), protection."""
        ...

    def view(self, integration_id: str) -> dict[str, Any]:
        """One integration's resolution, every value masked."""
        ...

    def set(self, integration_id: str, field: str, value: str) -> KeyStored:
        """Store the user's value of one field."""
        ...

    def clear(self, integration_id: str) -> list[str]:
        """Drop the user's values of one integration: the stores they were in."""
        ...

    def test(self, integration_id: str) -> KeyVerdict:
        """Run the integration's key test."""
        ...


@dataclass(frozen=True)
class SessionRef:
    id: str
    origin: Literal["env", "flag", "shell", "api", "socket"]
    """Where the identity came from: ``BAY_SESSION``, ``--session``, the calling shell's
    session id, a program using the Python API, or the session socket it came in on."""

    def as_row(self) -> dict[str, Any]:
        return {"id": self.id, "origin": self.origin}


@dataclass(frozen=True)
class ProfileRef:
    """The profile a verb acted on. Ephemeral sessions have an ``ephemeral`` profile of
    their own (``id`` ``ep-<session>``), which no other session can reach."""

    id: str
    label: str
    provider: str
    tier: Tier
    ephemeral: bool
    attached: int = 1
    """How many sessions have it in their attachment set (1 for an ephemeral profile)."""
    chosen: str = "ephemeral"
    """How this verb's profile was chosen: ``explicit`` (--profile), ``pinned``, ``default``
    (the only attachment), ``last-used``, ``group``, ``instance`` or ``ephemeral``."""
    among: int = 0
    """How many profiles the session had attached when this one was chosen (two or more: a
    bare verb could have meant another, so the answer's footer names this one)."""
    changed: bool = False
    """Another profile than the one the session's previous answer acted on (its first
    answer counts from its own ephemeral browser): the footer names it. Set on the answer."""
    host: str | None = None
    """The host of the keeper whose browser the verb ran on when it is not this keeper
    (forwarded over the fleet link): the footer says ``on <host>``. None: here."""

    def as_row(self) -> dict[str, Any]:
        row = {
            "id": self.id,
            "label": self.label,
            "provider": self.provider,
            "tier": self.tier,
            "ephemeral": self.ephemeral,
            "attached": self.attached,
            "chosen": self.chosen,
            "among": self.among,
            "changed": self.changed,
        }
        if self.host is not None:
            row["host"] = self.host
        return row


@dataclass(frozen=True)
class VerbCall:
    """A verb about to run (or that ran), as lifecycle hooks see it. ``args`` never carry
    typed text: values of ``fill``/``type``/``eval`` are replaced by their length."""

    verb: str
    args: Mapping[str, Any]
    session: SessionRef
    profile: ProfileRef | None
    road: str = "api"
    """The road the action came by: ``cli``, ``api``, ``mcp`` (declared by the client),
    ``trigger``, ``cdp`` or ``run`` (named by the keeper). A label for audits and gates: the
    same guards run on every road."""
    actor: str | None = None
    """Who acted, named by the keeper from where the request came in, never by the client:
    ``owner`` (the home's own socket), ``session-socket:<id>`` (a session socket the owner
    granted), ``trigger`` (the trigger intake); None where the keeper cannot tell (a call
    on a lease's CDP endpoint, whoever holds its URL)."""


@dataclass(frozen=True)
class VerbOutcome:
    ok: bool
    code: str | None
    elapsed_ms: float


@dataclass(frozen=True)
class ActionTarget:
    """The element an action is about to touch, as :func:`browserbay.hookspecs.bay_before_action`
    sees it: found on the page, nothing done to it yet."""

    target: str
    """As the agent gave it: an ``@eN`` reference or a selector (``''`` when the verb reaches
    the element at a point or through the focus)."""
    tab: str
    role: str
    """Its ARIA role (explicit, or implied by the tag: ``button``, ``link``, ``textbox``…)."""
    name: str
    """Its accessible name as the page gives it (``aria-label``, ``aria-labelledby``, a
    ``<label>``, a button's value, ``alt``/``title``, else its text), whitespace collapsed,
    at most 200 characters."""
    text: str
    """Its visible text (``innerText``), whitespace collapsed, at most 200 characters."""
    via: str = "target"
    """How the verb reaches it: ``target`` (the element the agent named: ``click @e3``,
    ``fill``, ``drag`` — its source, then its drop), ``point`` (the element under the pointer at
    :attr:`point`: ``mouse move|down|up|wheel``) or ``focus`` (the element that has the keys:
    ``press``, ``keydown``, ``keyup``, ``keyboard type|inserttext``). For ``point`` and
    ``focus`` :attr:`target` is ``''``; role, name and text are ``''`` when nothing is there
    (a point on the bare page, keys with nothing focused)."""
    selector: str = ""
    """A hint of where it is: ``tag#id[name=…]`` (``button#buy``), ``body`` for the page."""
    frame: str = ""
    """The address of the frame it is in (the page's, an iframe's), without query or
    fragment."""
    point: tuple[float, float] | None = None
    """For ``via == "point"``: the pointer's point, CSS pixels of the tab's viewport."""
    key: str | None = None
    """For ``press``/``keydown``/``keyup``: the key or chord (``Enter``, ``Control+a``) — a
    key name, never typed text (``keyboard type`` carries none: its text is only a length in
    ``call.args``)."""


#: How long an :class:`Ask` waits for a human by default (seconds; the verb's own deadline
#: bounds it too).
ASK_TIMEOUT = 120.0


@dataclass(frozen=True)
class Ask:
    """An approval gate's third answer (``bay_before_action`` may return it besides a
    :class:`~browserbay.refusals.Refusal` and None): neither let the action run nor refuse
    it — ask a human. The verb waits, its element untouched, while the live view shows a card
    (what, which page, which session) with Approve and Deny; approved, the action runs and the
    agent gets its answer; denied, ``approval_denied``; nobody answering within ``timeout``
    (or the verb's own deadline, whichever comes first), ``approval_timeout``."""

    reason: str
    """Why a human must approve it, shown on the card and in a refusal (``clicking the
    button "Buy now" needs a human's approval``)."""
    plugin: str = ""
    """The plugin that asks (the keeper fills in ``a policy`` when empty)."""
    timeout: float = ASK_TIMEOUT
    """The longest the verb waits for an answer, in seconds."""


@dataclass(frozen=True)
class PendingApproval:
    """An :class:`Ask` a human has not answered yet: what a live view's card and the
    keeper's status (:meth:`LiveHost.pending`) show. Every string is clipped; none carries
    typed text (``fill``/``type`` show only how many characters they would type)."""

    id: str
    """``a1``, ``a2``… (unique for the keeper's life)."""
    session: str
    profile: str
    tab: str
    verb: str
    what: str
    """The verb and its target, described (``click button "Buy now"``), at most 200
    characters."""
    url: str
    """The address of the page it would act on, without query or fragment."""
    reason: str
    plugin: str
    asked: float
    """``time.time()`` when it was asked."""
    expires: float
    """``time.time()`` after which it is answered ``approval_timeout``."""

    def as_row(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "session": self.session,
            "profile": self.profile,
            "tab": self.tab,
            "verb": self.verb,
            "what": self.what,
            "url": self.url,
            "reason": self.reason,
            "plugin": self.plugin,
            "asked": self.asked,
            "expires": self.expires,
        }


@dataclass(frozen=True)
class Pending:
    """What one lease waits on a human for: its open dialogs and its unanswered approvals
    (:meth:`LiveHost.pending`, read by a dashboard)."""

    session: str
    profile: str
    dialogs: tuple[PageDialog, ...]
    approvals: tuple[PendingApproval, ...]

    def as_row(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "profile": self.profile,
            "dialogs": [d.as_row() for d in self.dialogs],
            "approvals": [a.as_row() for a in self.approvals],
        }


@dataclass(frozen=True)
class Frame:
    """A picture of a tab's viewport: a JPEG whose pixels are CSS pixels, text fields masked."""

    jpeg: bytes
    width: int
    height: int


@dataclass(frozen=True)
class ActionTrace:
    """What one page action looked like, as :func:`browserbay.hookspecs.bay_action_traced`
    sees it. Never a typed value: no ``fill``/``type`` text, no key, no ``eval`` source, no
    query string; the frames mask every text field."""

    verb: str
    tab: str
    at: float
    """``time.time()`` when the action began."""
    target: str | None
    """As the agent gave it (``@e3``, a selector), or None for a verb without a target."""
    url: str
    """The page's address when the action began, without its query and fragment."""
    url_after: str
    box: tuple[float, float, float, float] | None
    """The target's box (x, y, width, height) in CSS pixels of the ``before`` frame."""
    point: tuple[float, float] | None
    """Where a pointer verb (click, check, uncheck, hover) acted, in CSS pixels of the frame."""
    before: Frame | None
    """The viewport just before the action (its target scrolled into view), or None."""
    after: Frame | None
    """The viewport once the verb ended, or None."""
    missing: tuple[str, ...] = ()
    """Why a frame is None (``before: the action never started``, ``after: Timeout…``)."""


@dataclass(frozen=True)
class KeeperInfo:
    """The keeper that loaded the plugins, as :func:`browserbay.hookspecs.bay_keeper_started`
    sees it."""

    pid: int
    version: str
    paths: BayPaths
    """Its directories (``state``, ``data``, ``runtime``, ``logs``): a plugin's files go in a
    directory of its own under one of them."""


@dataclass(frozen=True)
class BrowserInfo:
    browser_id: str
    provider: str
    pid: int | None
    ephemeral: bool


@dataclass(frozen=True)
class LeaseInfo:
    profile: ProfileRef
    session: SessionRef
    input_holder: InputHolder
    tabs: tuple[str, ...]
    ended: str | None = None
    """At ``detached``: why the lease ended — ``closed`` (``bay close``/``bay detach``: the
    session let it go), ``idle``, ``keeper_stop``, ``crashed``, ``restart`` or ``switch`` (a
    backend switch: the lease reattaches to the new browser at once). None otherwise."""


class VerbHost(Protocol):
    """What a plugin verb may ask of the keeper about the lease it runs on. The keeper's one
    implementation is made once per verb (``ctx.host``); the methods of the same names on
    :class:`VerbContext` are the way to call it."""

    async def page(self) -> Page:
        """The session's current Playwright page (its browser starts lazily)."""

    def adopt(self, page: Page) -> str:
        """Make a page of the lease's browser context one of the lease's tabs; its tab id."""

    async def keeper_verb(self, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """Run one of the keeper's own verbs; its ``(data, text)``."""

    def cdp_url(self) -> str | None:
        """The lease's browser's own CDP endpoint, when it runs and has one."""

    def live_view_url(self) -> str | None:
        """The vendor's own live viewer of the lease's browser, when it runs and has one."""

    async def guard(self, method: str, params: Mapping[str, Any], road: str) -> None:
        """The keeper's guards on a CDP call relayed to the lease; raises the refusal."""

    def waiting(self) -> AbstractAsyncContextManager[None]:
        """While the verb waits for a human, the session's other verbs are served (they do
        not queue behind it)."""


@dataclass(frozen=True)
class VerbContext:
    """What a plugin verb's handler gets: the call as data, and its methods (``page()``,
    ``adopt()``, ``keeper_verb()``, ``cdp_url()``, ``live_view_url()``, ``guard()``,
    ``progress()``), which ask the keeper through ``host``. ``args`` are validated against
    the verb's row; ``deadline`` is ``time.monotonic()`` by which the answer must be back."""

    verb: str
    args: Mapping[str, Any]
    session: SessionRef
    profile: ProfileRef
    deadline: float
    state_dir: Path
    """A directory of the plugin's own may be made under it (``state_dir / <plugin>``)."""
    host: VerbHost
    """The keeper's side of this call (the methods below forward to it)."""
    keys: KeyAdmin | None = None
    """The keys, as masked views and writes (``bay keys`` is built on it); it never hands
    out a plaintext key."""
    lease: LiveLease | None = None
    """The lease the verb acts on (read it, never change it): its tabs (``pages()``), who
    holds its controls (``info().input_holder``)."""
    providers: Mapping[str, ProviderRow] = field(default_factory=dict)
    """The provider rows the keeper loaded, by id (read them, never change them)."""
    target: LiveLease | None = None
    """The target lease the verb acts on, when its :attr:`PluginVerb.target` names one the
    session holds (a native window): takeover, ``browser_paused`` and ``browser_interrupted``
    apply to it instead of the browser's lease."""
    targets: TargetLeases | None = None
    """Leases on targets that are not browser profiles (``ctx.targets.hold(...)``): what a
    plugin that owns such targets (the ``local-window`` provider) gives its holders."""
    channel_session: str | None = None
    """The session the session socket this call came in on is fixed to; None on the owner's
    channel. A verb that shows what sessions did on a profile others share (the trace) shows
    this one's only: another session's pages are not the caller's to see."""

    async def page(self) -> Page:
        """``await ctx.page()``: the session's current Playwright page (its browser starts
        lazily), for verbs that need CDP. Declare ``needs=("has_cdp",)`` on the verb."""
        return await self.host.page()

    def adopt(self, page: Page) -> str:
        """``ctx.adopt(page)``: make a page of the lease's browser context one of the lease's
        tabs (a tab the plugin opened through a CDP connection of its own); answers its tab
        id."""
        return self.host.adopt(page)

    async def keeper_verb(self, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """``await ctx.keeper_verb("new", args)``: run one of the keeper's own verbs (``new``,
        ``profiles``…) as part of this one; answers its ``(data, text)``."""
        return await self.host.keeper_verb(name, args)

    def cdp_url(self) -> str | None:
        """``ctx.cdp_url()``: the lease's browser's own CDP endpoint once it runs (``await
        ctx.page()`` first), for providers with the ``cdp_endpoint`` cell; None otherwise.
        Never hand it to an agent: it reaches every session's tabs."""
        return self.host.cdp_url()

    def live_view_url(self) -> str | None:
        """``ctx.live_view_url()``: the vendor's own live viewer of the lease's browser once
        it runs (``await ctx.page()`` first), for providers with the ``provider_view`` cell;
        None otherwise."""
        return self.host.live_view_url()

    async def guard(self, method: str, params: Mapping[str, Any], road: str) -> None:
        """``await ctx.guard(method, params, road)``: the keeper's guards (pause, restart gap,
        ``bay_before_verb``, domain fence, audit) on a CDP call the plugin relays to the
        lease on an agent's behalf (road ``cdp`` or ``run``); raises the refusal. Calls that
        are a verb in all but name (``Page.navigate``, ``Target.createTarget``: ``open``) are
        judged as that verb; others pass."""
        await self.host.guard(method, params, road)

    def waiting(self) -> AbstractAsyncContextManager[None]:
        """``async with ctx.waiting(): ...``: the verb waits (for a human) without holding
        its session: the session's other verbs are served meanwhile instead of queueing —
        refused ``browser_paused`` while its browser is paused, ``bay live`` and ``bay
        status`` answered. Touch nothing of the session inside (the other verbs may)."""
        return self.host.waiting()

    async def progress(self, text: str) -> bool:
        """``await ctx.progress(text)``: a line the client prints (on stderr) while the verb
        still runs — a link a human must open before the verb can end. False when the client
        did not ask for progress lines. Sent as text whatever a plugin passes (a number,
        NaN): the frame's ``progress`` is a string, which is all the native client reads."""
        return await say_progress(str(text))


VerbHandler = Callable[[VerbContext], Awaitable[tuple[dict[str, Any], str]]]


@dataclass(frozen=True)
class PluginVerb:
    """A verb a plugin contributes through :func:`browserbay.hookspecs.bay_verbs`: its row
    (a :class:`browserbay.verbs.Verb` with scope ``plugin``) and the handler that answers
    ``(data, text)`` or raises a :class:`browserbay.refusals.Refusal`."""

    verb: Verb
    handler: VerbHandler
    while_paused: bool = False
    """The verb never touches the page (it hands out a link, waits for a human): it runs
    while a human holds the controls, and a takeover does not cut it."""
    target: Callable[[Mapping[str, Any]], str | None] | None = None
    """Which target lease the verb acts on, from its arguments (``bay window click w1`` ->
    ``w1``), or None. When the session holds that target lease the keeper checks and cuts the
    verb on it (a human driving the window) instead of on the browser's lease, and skips the
    verb's ``needs`` cells (they are the browser's); ``ctx.target`` is that lease."""
    lease_free: bool = False
    """The verb acts on no profile and no browser (``bay keys``, ``bay window``): the keeper
    runs it without choosing a lease, so ``profile_required``, a paused browser and a backend
    switch's gap never apply to it; a ``target`` it names is still paused and cut on that
    target's own lease. Its ``ctx.profile`` is the session's ephemeral profile; it must not
    call ``ctx.page()``."""


# -- live view ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PauseInfo:
    """Why a lease's agent is paused: a human took the controls in a live view
    (``origin`` ``takeover``) or the agent asked for one (``handoff``)."""

    origin: Literal["takeover", "handoff"]
    by: str
    """Who, in words: ``a human in the live view (viewer 3)``, ``a handoff you asked for``."""
    reason: str
    since: float
    """``time.time()`` when the pause began."""
    holder: str | None
    """The viewer driving now (None: nobody yet, or the driver left)."""
    session: str = ""
    """The session whose lease the human took: a pause holds every lease on that browser
    (every session sharing the profile), this one's and its siblings'."""


@dataclass(frozen=True)
class LiveViewer:
    """One live-view page open on a lease (told by its transport: ``LiveHost.viewing``)."""

    id: str
    """The transport's name for it (``viewer 3``)."""
    mode: Literal["watch", "control"]


@dataclass(frozen=True)
class LiveTab:
    """One tab of a lease's browser as the live page's strip shows it (``LiveHost.tabs``)."""

    id: str
    session: str
    """The session that holds it."""
    own: bool
    """It is the lease's own (the live page's session's): shown with its page, closable."""


@dataclass(frozen=True)
class LeaseStatus:
    """Who holds what on one lease, as ``bay status`` and the live pages show it
    (``LiveHost.status``): the input holder, the viewer that drives, every viewer, the
    pause, and the browser's memory as the keeper last measured it."""

    session: str
    profile: str
    """The profile's id (a target lease: its key, ``w1``)."""
    handle: str
    input_holder: InputHolder
    driver: str | None
    """The viewer whose input reaches the page (None: nobody drives)."""
    viewers: tuple[LiveViewer, ...]
    pause: PauseInfo | None
    pss_kib: int | None
    """The browser's proportional set size at the last measure (None: not running, or
    not measured yet)."""
    memory_over: bool
    """The browser is above the owner's ``BAY_MEMORY_NOTICE_MB`` line (and has not fallen
    below the lower line since)."""

    def as_row(self) -> dict[str, Any]:
        pause = self.pause
        return {
            "session": self.session,
            "profile": self.profile,
            "handle": self.handle,
            "input_holder": self.input_holder,
            "driver": self.driver,
            "viewers": [{"id": v.id, "mode": v.mode} for v in self.viewers],
            "paused": None
            if pause is None
            else {
                "origin": pause.origin,
                "by": pause.by,
                "reason": pause.reason,
                "since": pause.since,
                "session": pause.session,
            },
            "pss_kib": self.pss_kib,
            "memory_over": self.memory_over,
        }


DialogKind = Literal["alert", "confirm", "prompt", "beforeunload"]


@dataclass(frozen=True)
class PageDialog:
    """A dialog a page opened and nobody has answered yet: the page's script is stopped
    until it is (see ``bay dialog``). ``message`` and ``default`` are the page's text, clipped
    where they are shown."""

    tab: str
    kind: DialogKind
    message: str
    default: str
    """A prompt's default value (empty for the other kinds)."""
    opened: float
    """``time.time()`` when it opened."""

    def as_row(self) -> dict[str, Any]:
        return {
            "tab": self.tab,
            "type": self.kind,
            "message": self.message,
            "default": self.default,
            "opened": self.opened,
        }


class LiveLease(Protocol):
    """A lease as a live-view transport reads it (the keeper's own object: read it, never
    change it; change it through :class:`LiveHost`)."""

    @property
    def session(self) -> SessionRef: ...

    @property
    def profile(self) -> ProfileRef: ...

    @property
    def current(self) -> str | None:
        """The tab the agent acts on."""

    @property
    def agent_point(self) -> tuple[str, float, float] | None:
        """``(tab, x, y)``: where the agent last pointed (CSS pixels of that tab's viewport)."""

    def pages(self) -> dict[str, Page]:
        """Tab id -> Playwright page, in order; empty while its browser is not running."""

    @property
    def window(self) -> LiveWindow | None:
        """The native window of a target lease (None for a browser's lease)."""

    def pause_info(self) -> PauseInfo | None: ...

    def info(self) -> LeaseInfo: ...


class LiveWindow(Protocol):
    """A native window a live view can show and a human can drive (``LiveLease.window``),
    offered by the plugin that owns it. Every call is bounded and runs its X11 work off the
    keeper's event loop."""

    @property
    def handle(self) -> str:
        """The window's handle (``w1``)."""

    @property
    def title(self) -> str:
        """Its title as last seen."""

    @property
    def where(self) -> str:
        """What it is, in words for the page (``gtk_app.py on :5``)."""

    async def frame(self, force: bool = False) -> bytes | None:
        """The window's pixels as a JPEG of its own size, or None when they did not change
        since the last frame (``force``: a frame anyway). Raises :class:`LookupError` when
        the window is gone."""

    async def send_input(self, event: Mapping[str, Any]) -> bool:
        """One input event of the live page's protocol (``mouse`` with x, y as fractions
        of the picture, ``wheel``, ``key``, ``text``), injected into the window; False when
        it could not be."""

    async def release(self) -> None:
        """Let go of every key and button the human's input still holds down (the human
        stopped driving: handback, idle handback, the page closed). Cheap when none is."""


class TargetLeases(Protocol):
    """The keeper's leases on targets that are not browser profiles (``ctx.targets``). They
    are the same :class:`LiveLease` objects as a browser's: a live view shows them, a human
    takes them over (``bay_takeover``/``bay_handback``), the agent is refused
    ``browser_paused`` on them meanwhile."""

    def hold(
        self, key: str, label: str, provider: str, window: LiveWindow | None = None
    ) -> LiveLease:
        """The calling session's lease on target ``key`` (made now if it has none:
        ``bay_lease_changed`` ``attached``)."""

    def end(self, session_id: str, key: str, reason: str = "closed") -> None:
        """That session's lease on ``key`` ends (a human driving it is let go;
        ``bay_lease_changed`` ``detached``, which revokes its live links)."""


class LiveHost(Protocol):
    """What the keeper offers a live-view transport (``TransportRow.factory(host)``)."""

    def lease(self, session_id: str, profile_id: str) -> LiveLease | None:
        """The session's lease on the profile, or None (never starts anything)."""

    def take_over(
        self, session_id: str, profile_id: str, viewer: str | None, reason: str = ""
    ) -> PauseInfo:
        """Pause the agent: ``viewer`` takes the controls (None: a handoff the agent asked
        for, nobody driving yet). Verbs in flight on the lease are cut. Raises
        :class:`~browserbay.refusals.Refusal` when another viewer drives."""

    def release(self, session_id: str, profile_id: str, viewer: str) -> None:
        """The viewer that drives went away: the pause stays, nobody drives."""

    async def hand_back(
        self, session_id: str, profile_id: str, viewer: str, why: str, note: str = ""
    ) -> bool:
        """Give the controls back to the agent (``why``: ``explicit``, ``idle``…) — of every
        lease on that browser; each session's next answer carries a notice (with the
        human's ``note``, clipped). False when the lease was not paused."""

    def note_input(self, session_id: str, profile_id: str) -> None:
        """The human's input reached the page: the idle handback's clock, and activity for
        the idle timeout of every session on that browser."""

    def viewing(self, session_id: str, profile_id: str, viewer: LiveViewer, on: bool) -> None:
        """A live-view page opened (``on``) or closed on the lease: ``bay status`` and
        :meth:`status` list it."""

    def status(self, session_id: str, profile_id: str) -> LeaseStatus | None:
        """Who holds what on the session's lease (None: it holds none there)."""

    def statuses(self) -> list[LeaseStatus]:
        """:meth:`status` of every lease the keeper holds (an owner's dashboard)."""

    def tabs(self, session_id: str, profile_id: str) -> list[LiveTab]:
        """Every tab of the lease's browser, whose each is (its own first)."""

    async def close_tab(self, session_id: str, profile_id: str, tab_id: str) -> bool:
        """Close one of the lease's own tabs (a human with a control link); False when it
        has no tab of that id."""

    async def resume_tabs(self, session_id: str, profile_id: str) -> int:
        """Reopen the session's kept tabs on the lease (the page's Resume, as ``bay resume``
        does; its browser starts for them); how many parked tabs came back."""

    async def stop_lease(self, session_id: str, profile_id: str) -> bool:
        """End the session's lease as ``bay close --profile`` does (the owner's dashboard
        stops it; a pause on it is let go first). False when it held no browser."""

    async def expire_idle(self) -> None:
        """Hand back every pause whose driver gave no input for ``BAY_HANDBACK_IDLE``."""

    async def wait_handback(self, session_id: str, profile_id: str, timeout: float) -> bool:
        """Wait until the lease is not paused (True) or ``timeout`` passes (False)."""

    def dialogs_of(self, session_id: str, profile_id: str) -> dict[str, PageDialog]:
        """The dialogs open on the lease's tabs, by tab id (empty: none)."""

    async def answer_dialog(
        self,
        session_id: str,
        profile_id: str,
        tab_id: str,
        accept: bool,
        text: str | None,
        viewer: str,
    ) -> bool:
        """A human in the live view answers the dialog open on the tab (``text``: a prompt's
        answer, never logged); the agent's next answer says so. False when none is open."""

    def approvals_of(self, session_id: str, profile_id: str) -> list[PendingApproval]:
        """The approvals the lease's verbs wait for, oldest first (empty: none)."""

    def answer_approval(
        self, session_id: str, profile_id: str, approval_id: str, approve: bool, viewer: str
    ) -> bool:
        """A human in the live view approves or denies one of the lease's pending approvals;
        the waiting verb goes on (or is refused ``approval_denied``). False when it is not
        pending (answered, timed out, or the verb was cut)."""

    def pending(self) -> list[Pending]:
        """Every lease that waits on a human — an open dialog, an unanswered approval — of
        every session (a dashboard's view; empty: nobody waits)."""


class LiveTransport(Protocol):
    """What a transport factory returns."""

    async def stop(self) -> None:
        """Close every viewer and the server (called before the keeper's browsers close)."""


DoctorStatus = Literal["ok", "warn", "fail"]


@dataclass(frozen=True)
class DoctorCheck:
    """One row of ``bay doctor``: what was checked on this machine and what to do about it."""

    area: str
    """What it belongs to: ``browser``, ``display``, ``at-spi``, ``keychain``, ``plugins``,
    ``providers``, ``keeper``, ``disk`` (a plugin may name its own)."""
    name: str
    """The thing checked, a word or two (``chromium``, ``xvfb``, ``secret service``)."""
    status: DoctorStatus
    """``ok``; ``warn`` (works, with a limit worth knowing); ``fail`` (something will not work)."""
    detail: str
    """What was found: a path and version, or why it failed. Never a secret."""
    fix: str = ""
    """The command (or the one step) that fixes a ``warn`` or ``fail``; empty for ``ok``."""

    def as_row(self) -> dict[str, str]:
        return {
            "area": self.area,
            "name": self.name,
            "status": self.status,
            "detail": self.detail,
            "fix": self.fix,
        }
