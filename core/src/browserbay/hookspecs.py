"""The plugin contract: every hook browserbay calls, typed and documented in one place.

A plugin is a module (or object) with functions named like these, decorated with
:data:`hookimpl`, registered through the ``browserbay`` entry-point group::

    [project.entry-points.browserbay]
    myprovider = "browserbay_myprovider.plugin"

Row hooks (``bay_providers``, ``bay_access_tiers``, …) return lists; the core collects them
into one table per area and refuses two rows with the same id. ``docs/hooks.md`` documents
each hook with its exact signature; a test fails when a hook here is missing from it or from
the tests.
"""

from __future__ import annotations

from collections.abc import Sequence

import pluggy

from browserbay.model import (
    ActionTarget,
    ActionTrace,
    Ask,
    BrowserInfo,
    DoctorCheck,
    Failure,
    IntegrationRow,
    KeeperInfo,
    KeySource,
    LeaseInfo,
    PluginVerb,
    ProviderRow,
    TierHint,
    TierRow,
    TransportRow,
    VerbCall,
    VerbOutcome,
)
from browserbay.refusals import Refusal

PROJECT = "browserbay"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# -- providers -------------------------------------------------------------------------


@hookspec
def bay_providers() -> Sequence[ProviderRow]:
    """Return the providers this plugin contributes.

    Each row carries an id (``chromium``, ``cdp``, ``cloud:steel``…), a tier, capability cells
    and a driver factory. Ids must be unique across all plugins: a duplicate is an error at
    load time that names both plugins.
    """
    raise NotImplementedError


# -- access tiers -----------------------------------------------------------------------


@hookspec
def bay_access_tiers() -> Sequence[TierRow]:
    """Return rungs of the access-tier ladder (1 CDP, 2 fingerprint CDP, 3 computer use)."""
    raise NotImplementedError


@hookspec(firstresult=True)
def bay_tier_hint(failure: Failure) -> TierHint | None:
    """Look at what a verb met (HTTP status, title, URL) and return a hint that another
    tier may fare better, or None. The first hint wins. Word it as a hint, never a
    detection; the core never escalates a tier by itself."""
    raise NotImplementedError


# -- live view --------------------------------------------------------------------------


@hookspec
def bay_live_view_transports() -> Sequence[TransportRow]:
    """Return live-view transports (CDP screencast, X11 window frames, a vendor's viewer)."""
    raise NotImplementedError


# -- keys -------------------------------------------------------------------------------


@hookspec
def bay_key_sources() -> Sequence[KeySource]:
    """Return key sources, each with precedence ``user`` or ``cluster``. Resolution is
    always the user's own key > the cluster default > none."""
    raise NotImplementedError


@hookspec
def bay_integrations() -> Sequence[IntegrationRow]:
    """Return integration rows: what needs keys, its fields (which are secret), the
    vendor's own environment names and how a key is tested."""
    raise NotImplementedError


# -- verbs ------------------------------------------------------------------------------


@hookspec
def bay_verbs() -> Sequence[PluginVerb]:
    """Return verbs this plugin adds to ``bay`` (``keys``, ``window``…): each a row of the
    verb table (scope ``plugin``) and an async handler run by the keeper. A name that is
    already a verb (the core's or another plugin's) is an error at load time. The thin
    client learns these rows from the keeper, so they cost nothing on its hot path."""
    raise NotImplementedError


# -- doctor ---------------------------------------------------------------------------


@hookspec
def bay_doctor_checks() -> Sequence[DoctorCheck]:
    """Return rows for ``bay doctor``: what this plugin needs from the machine (a binary and
    its version, a display that starts, a bus that answers), each ``ok``, ``warn`` or
    ``fail`` with the command that fixes it.

    Called in the ``bay doctor`` process, never in the keeper, which need not run. A check may
    start a short-lived process (Xvfb for a moment, ``chromium --version``) but must bound it
    (a few seconds) and leave nothing behind. A hook that raises becomes a ``fail`` row naming
    the plugin; the other rows are still printed."""
    raise NotImplementedError


# -- lifecycle --------------------------------------------------------------------------


@hookspec
def bay_keeper_started(keeper: KeeperInfo) -> None:
    """The keeper has loaded its plugins and its registry and is about to serve. Make here
    what the plugin keeps for the keeper's life (a server, a writer thread, a book of
    windows), on the plugin object — an entry point may name a class, which the core makes
    one instance of per load — never in a module global; let it go in
    :func:`bay_keeper_stopping`. A plugin that raises is logged and skipped."""
    raise NotImplementedError


@hookspec
def bay_keeper_stopping() -> None:
    """The keeper is shutting down, its last answers sent: called before its live views stop
    and its browsers close (``bay_browser_stopped`` with ``keeper_stop`` follows). Stop and
    drop what :func:`bay_keeper_started` made, quickly (a thread of your own may finish the
    work). A plugin that raises is logged and skipped."""
    raise NotImplementedError


@hookspec
def bay_before_verb(call: VerbCall) -> Refusal | Ask | None:
    """Called before a verb runs. Return a :class:`~browserbay.refusals.Refusal` (code
    ``verb_refused`` with ``plugin``, ``reason`` and ``fix``) to stop it — an approval gate,
    a policy —, an :class:`~browserbay.model.Ask` to have a human approve or deny it first,
    or None to let it run. Every implementation is called; the first refusal in pluggy's
    call order wins over any Ask, the first Ask over None, and nothing of the verb has run.
    ``call.profile`` is None for the keeper's own verbs (``keeper``, ``plugins``).

    An Ask waits (bounded, as ``bay_before_action``'s does) only where a verb acts on a
    lease's pages — a page, tab or plugin verb, which a takeover can cut — and shows a card
    naming the verb as the agent typed it (never typed text); any other verb (a session or
    keeper verb) and a road that cannot wait (a call on a lease's CDP endpoint, a ``bay run``
    script's) is refused ``verb_refused`` instead: an Ask is never taken for a yes.

    Hooks are plain (synchronous) functions called on the keeper's event loop: keep them
    quick, and hand slow work (network, disk) to a thread or queue of your own."""
    raise NotImplementedError


@hookspec
def bay_before_action(call: VerbCall, target: ActionTarget) -> Refusal | Ask | None:
    """Called before every verb that acts on the page, with the element it will act on,
    however the agent reaches it (``target.via``): the element it named (``click``, ``fill``,
    ``type``, ``select``, ``check``, ``uncheck``, ``focus``, ``upload``, ``download``,
    ``dblclick``, ``find … <action>``; ``drag`` asks for its source, then its drop), the element
    under the pointer (``mouse move|down|up|wheel``: ``target.point``) or the element that has
    the keys (``press``, ``keydown``, ``keyup``: ``target.key``; ``keyboard type|inserttext``).
    ``target`` says what it is (role, accessible name, text, a selector hint, its frame).
    Return a :class:`~browserbay.refusals.Refusal` (``verb_refused``) to stop the action — an
    approval gate for a "Buy" or "Delete" button —, an :class:`~browserbay.model.Ask` to have
    a human approve or deny it in the live view while the verb waits (bounded), or None.
    Every implementation is called; the first refusal wins over any Ask, the first Ask over
    None, and nothing has been done to the element. ``call.profile`` is the
    profile the verb acts on, ``call.actor`` who acted; ``call.args`` never carry typed text.

    The keeper describes the element (one round trip to the page) only when some plugin
    implements this hook; a sync function on the keeper's loop, like the other hooks."""
    raise NotImplementedError


@hookspec
def bay_after_verb(call: VerbCall, outcome: VerbOutcome) -> None:
    """Called after every verb, refused or not: audit sinks, action traces, metrics.
    ``call.args`` never carry typed text. A plugin that raises here is logged and skipped:
    it cannot fail the verb or the keeper (the same holds for the notification hooks below)."""
    raise NotImplementedError


@hookspec
def bay_action_traced(call: VerbCall, outcome: VerbOutcome, trace: ActionTrace) -> None:
    """Called after each page action (``open``, ``click``, ``fill``, ``type``, ``press``,
    ``select``, ``check``, ``uncheck``, ``hover``, ``scroll``, ``back``, ``forward``,
    ``reload``, ``eval``, ``login-check``), right after ``bay_after_verb``, with what it looked
    like: a JPEG frame of the tab before and after it (CSS pixels; every text field masked),
    the target's box and the pointer's point, and why a frame is missing. Never a typed
    value. The keeper takes the frames (two screenshots of the tab, bounded in time; a frame
    that fails is None and the action goes on) only when some plugin implements this hook.

    A plain function on the keeper's loop, like the other notification hooks: hand the
    bytes to a thread of your own to write them; an exception is logged and skipped."""
    raise NotImplementedError


@hookspec
def bay_browser_started(browser: BrowserInfo) -> None:
    """A browser process was started by the keeper."""
    raise NotImplementedError


@hookspec
def bay_browser_stopped(browser: BrowserInfo, reason: str) -> None:
    """A browser the keeper started has stopped. ``reason``: ``idle`` (no session used it
    for the grace period), ``keeper_stop`` (the keeper is shutting down), ``crashed`` (it
    went away by itself; its sessions get a fresh browser at their next verb), ``switch``
    (a backend switch restarts the profile on another provider) or ``switch_failed`` (the
    new backend's browser, stopped as a failed switch rolls back)."""
    raise NotImplementedError


@hookspec
def bay_lease_changed(lease: LeaseInfo, change: str) -> None:
    """A session's lease on a profile changed: ``attached`` (its browser context started),
    ``tabs`` (a tab of the lease opened or closed; ``lease.tabs`` lists them now) or
    ``detached`` (the session closed, idled out or lost its browser; ``lease.tabs`` lists
    what it held)."""
    raise NotImplementedError


@hookspec
def bay_takeover(lease: LeaseInfo, viewer: str) -> None:
    """A human took the controls of a lease: the agent's page verbs are now paused."""
    raise NotImplementedError


@hookspec
def bay_handback(lease: LeaseInfo, viewer: str) -> None:
    """The human handed the controls back to the agent."""
    raise NotImplementedError
