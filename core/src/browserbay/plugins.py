"""The plugin manager: built-ins and entry points, filtered by the environment.

``BAY_LOAD_PLUGINS=a,b`` loads only those entry points (an allowlist; empty string: none),
``BAY_DISABLE_PLUGINS=a,b`` skips those. ``BAY_PLUGIN_MODULES=pkg.mod,…`` registers modules
that are not installed as distributions (a plugin under development, a test's plugin), like
pytest's ``-p``. Entry-point names must be unique (pluggy would silently skip a duplicate: we
refuse it instead).
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from types import ModuleType
from typing import Any, TypeVar, cast

import pluggy

from browserbay import hookspecs
from browserbay.keys import BookAdmin, KeyBook
from browserbay.keytest import run_test
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
from browserbay.verbs import BY_NAME as CORE_VERBS
from browserbay.verbs import PLUGIN, Verb

ENTRY_POINT_GROUP = "browserbay"
log = logging.getLogger("browserbay.plugins")

#: Plugins that ship inside the core and register like any other.
BUILTINS: tuple[str, ...] = (
    "browserbay.builtins.tiers",
    "browserbay.builtins.keys",
    "browserbay.builtins.providers",
)


class PluginError(Exception):
    """A plugin could not be loaded or contributes something that clashes; the message
    names the plugin and what to do."""


@dataclass(frozen=True)
class PluginInfo:
    name: str
    distribution: str | None
    version: str | None
    hooks: tuple[str, ...]
    builtin: bool
    error: str | None = None
    """Why the plugin is not loaded (an import or validation failure), when it is not."""


def _names(env: Mapping[str, str], var: str) -> set[str] | None:
    if var not in env:
        return None
    return {n.strip() for n in env[var].split(",") if n.strip()}


R = TypeVar("R")
K = TypeVar("K", bound=Hashable)


class Hooks:
    """The typed face of the plugin manager's hooks: one method per hookspec of
    :mod:`browserbay.hookspecs`, with its name and its parameters, so the core never calls a
    hook by a string name and mypy checks every call (the pattern of tox's plugin manager).
    ``core/tests/test_plugins.py`` fails when a hookspec has no method here or a method no
    hookspec.

    Row hooks answer each plugin's rows with its name (a clash can name both plugins);
    ``bay_doctor_checks`` answers each plugin's implementation, for ``bay doctor`` to run side
    by side. Gates (``bay_before_verb``, ``bay_before_action``) answer the first refusal.
    Notification hooks call every implementation, and one that raises is logged and skipped:
    an audit sink's bug must not take the keeper down."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self._pm = pm

    # -- rows: called once, by :class:`Plugins` ---------------------------------------

    def bay_providers(self) -> list[tuple[str, Sequence[ProviderRow]]]:
        return _rows(self._pm.hook.bay_providers, ProviderRow)

    def bay_access_tiers(self) -> list[tuple[str, Sequence[TierRow]]]:
        return _rows(self._pm.hook.bay_access_tiers, TierRow)

    def bay_live_view_transports(self) -> list[tuple[str, Sequence[TransportRow]]]:
        return _rows(self._pm.hook.bay_live_view_transports, TransportRow)

    def bay_key_sources(self) -> list[tuple[str, Sequence[KeySource]]]:
        return _rows(self._pm.hook.bay_key_sources, KeySource)

    def bay_integrations(self) -> list[tuple[str, Sequence[IntegrationRow]]]:
        return _rows(self._pm.hook.bay_integrations, IntegrationRow)

    def bay_verbs(self) -> list[tuple[str, Sequence[PluginVerb]]]:
        return _rows(self._pm.hook.bay_verbs, PluginVerb)

    def bay_doctor_checks(self) -> list[tuple[str, Callable[[], Sequence[DoctorCheck] | None]]]:
        """Each plugin's implementation, in pluggy's call order, not yet called."""
        return [
            (impl.plugin_name, cast(Callable[[], Sequence[DoctorCheck] | None], impl.function))
            for impl in reversed(self._pm.hook.bay_doctor_checks.get_hookimpls())
        ]

    # -- answers ----------------------------------------------------------------------

    def bay_tier_hint(self, failure: Failure) -> TierHint | None:
        return cast(TierHint | None, self._pm.hook.bay_tier_hint(failure=failure))

    def bay_before_verb(self, call: VerbCall) -> Refusal | Ask | None:
        """The first refusal, else the first Ask, else None (as ``bay_before_action``)."""
        return _gate("bay_before_verb", self._pm.hook.bay_before_verb(call=call))

    def bay_before_action(self, call: VerbCall, target: ActionTarget) -> Refusal | Ask | None:
        """The first refusal, else the first Ask (a refusal is never overruled by a human's
        approval of what another gate asked), else None."""
        return _gate("bay_before_action", self._pm.hook.bay_before_action(call=call, target=target))

    def gates_actions(self) -> bool:
        """Some plugin implements ``bay_before_action`` (the keeper then describes each
        element before acting on it)."""
        return bool(self._pm.hook.bay_before_action.get_hookimpls())

    # -- notifications ----------------------------------------------------------------

    def bay_keeper_started(self, keeper: KeeperInfo) -> None:
        _notify(self._pm.hook.bay_keeper_started, keeper=keeper)

    def bay_keeper_stopping(self) -> None:
        _notify(self._pm.hook.bay_keeper_stopping)

    def bay_after_verb(self, call: VerbCall, outcome: VerbOutcome) -> None:
        _notify(self._pm.hook.bay_after_verb, call=call, outcome=outcome)

    def bay_action_traced(self, call: VerbCall, outcome: VerbOutcome, trace: ActionTrace) -> None:
        _notify(self._pm.hook.bay_action_traced, call=call, outcome=outcome, trace=trace)

    def traces_actions(self) -> bool:
        """Some plugin implements ``bay_action_traced`` (the keeper then takes frames)."""
        return bool(self._pm.hook.bay_action_traced.get_hookimpls())

    def bay_browser_started(self, browser: BrowserInfo) -> None:
        _notify(self._pm.hook.bay_browser_started, browser=browser)

    def bay_browser_stopped(self, browser: BrowserInfo, reason: str) -> None:
        _notify(self._pm.hook.bay_browser_stopped, browser=browser, reason=reason)

    def bay_lease_changed(self, lease: LeaseInfo, change: str) -> None:
        _notify(self._pm.hook.bay_lease_changed, lease=lease, change=change)

    def bay_takeover(self, lease: LeaseInfo, viewer: str) -> None:
        _notify(self._pm.hook.bay_takeover, lease=lease, viewer=viewer)

    def bay_handback(self, lease: LeaseInfo, viewer: str) -> None:
        _notify(self._pm.hook.bay_handback, lease=lease, viewer=viewer)


def _rows(caller: pluggy.HookCaller, kind: type[R]) -> list[tuple[str, Sequence[R]]]:
    """A row hook's rows, per plugin in registration order (pluggy is untyped here: the
    hookspec declares what each implementation answers)."""
    return [
        (impl.plugin_name, cast(Sequence[R], impl.function() or ()))
        for impl in caller.get_hookimpls()
    ]


def _gate(hook: str, answers: list[Refusal | Ask | None]) -> Refusal | Ask | None:
    """A gate's answer: the first refusal in pluggy's call order, else the first Ask, else
    None. A gate that answers nonsense is never taken for a yes."""
    wrong = [a for a in answers if a is not None and not isinstance(a, (Refusal, Ask))]
    if wrong:
        raise TypeError(f"{hook} answered a {type(wrong[0]).__name__}")
    refused = next((a for a in answers if isinstance(a, Refusal)), None)
    if refused is not None:
        return refused
    return next((a for a in answers if isinstance(a, Ask)), None)


def _notify(caller: pluggy.HookCaller, **kwargs: object) -> None:
    """Call every implementation of a notification hook; one that raises is logged and
    skipped."""
    for impl in reversed(caller.get_hookimpls()):
        try:
            impl.function(**{k: kwargs[k] for k in impl.argnames})
        except Exception:
            log.exception("plugin %r failed in %s; carrying on", impl.plugin_name, caller.name)


class Plugins:
    """A loaded plugin manager, its typed :class:`Hooks`, and the tables collected from the
    row hooks."""

    def __init__(self, pm: pluggy.PluginManager, infos: list[PluginInfo]):
        self.pm = pm
        self.infos = infos
        self.hooks = Hooks(pm)
        # Row hooks are called once, here: a clash is reported at load time, not at first
        # use, and a verb never re-runs them. (They are read per implementation, in pluggy's
        # call order, so that a duplicate id can name both plugins.)
        hooks = self.hooks
        self.providers = _collect("bay_providers", hooks.bay_providers(), lambda r: r.id)
        self.tiers = _collect("bay_access_tiers", hooks.bay_access_tiers(), lambda r: r.tier)
        self.transports = _collect(
            "bay_live_view_transports", hooks.bay_live_view_transports(), lambda r: r.kind
        )
        self.key_sources = _collect("bay_key_sources", hooks.bay_key_sources(), lambda r: r.name)
        self.integrations = _collect("bay_integrations", hooks.bay_integrations(), lambda r: r.id)
        #: Key resolution over the two tables above (the keeper's one reveal is
        #: ``keys.child_env``); ``key_admin`` is what plugin verbs get: views, never values.
        self.keys = KeyBook(self.key_sources, self.integrations)
        self.key_admin = BookAdmin(self.keys, run_test)
        verb_owner: dict[str, str] = {}
        self.verbs = _collect("bay_verbs", hooks.bay_verbs(), lambda r: r.verb.name, verb_owner)
        for name, pv in self.verbs.items():
            pv.verb.plugin = verb_owner[name]
            if name in CORE_VERBS:
                raise PluginError(
                    f"a plugin adds the verb {name!r}, which is one of the core's; rename it"
                )
            if pv.verb.scope != PLUGIN:
                raise PluginError(f"the plugin verb {name!r} must have scope 'plugin'")

    def verb_table(self) -> dict[str, Verb]:
        """The core's verbs and the plugins' verbs, by name."""
        return {**CORE_VERBS, **{name: pv.verb for name, pv in self.verbs.items()}}

    def listing(self) -> list[dict[str, Any]]:
        return [
            {
                "name": i.name,
                "distribution": i.distribution,
                "version": i.version,
                "hooks": list(i.hooks),
                "builtin": i.builtin,
                "error": i.error,
            }
            for i in self.infos
        ]


def _collect(
    hook_name: str,
    per_plugin: list[tuple[str, Sequence[R]]],
    key: Callable[[R], K],
    owner: dict[K, str] | None = None,
) -> dict[K, R]:
    """One table from a row hook's rows, refusing duplicate ids (``hook_name`` words the
    error). ``owner`` (when given) is filled with the plugin name of each row."""
    table: dict[K, R] = {}
    owner = {} if owner is None else owner
    for plugin_name, rows in per_plugin:
        for row in rows:
            k = key(row)
            if k in table:
                raise PluginError(
                    f"{hook_name}: {k!r} is contributed by both {owner[k]!r} and "
                    f"{plugin_name!r}; uninstall one, or disable it with "
                    f"BAY_DISABLE_PLUGINS={plugin_name}"
                )
            table[k] = row
            owner[k] = plugin_name
    return table


def _hooks_of(pm: pluggy.PluginManager, plugin: object) -> tuple[str, ...]:
    return tuple(sorted(h.name for h in (pm.get_hookcallers(plugin) or [])))


def load_plugins(
    env: Mapping[str, str] | None = None,
    *,
    extra: Iterable[tuple[str, object]] = (),
    entry_points: Iterable[metadata.EntryPoint] | None = None,
    strict: bool = True,
) -> Plugins:
    """Build the plugin manager: built-ins, then entry points, then ``extra`` (tests).

    ``strict=False`` (the keeper) skips a plugin that fails to import or does not match the
    hook specifications, logs why and lists it with its ``error`` in ``bay plugins``: one
    broken plugin must not take every browser down with it."""
    env = os.environ if env is None else env
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    infos: list[PluginInfo] = []
    broken: list[PluginInfo] = []

    for modname in BUILTINS:
        module = importlib.import_module(modname)
        name = modname.rsplit(".", 1)[-1]
        pm.register(module, name=name)
        infos.append(PluginInfo(name, "browserbay-core", _version("browserbay-core"), (), True))

    allow = _names(env, "BAY_LOAD_PLUGINS")
    deny = _names(env, "BAY_DISABLE_PLUGINS") or set()
    eps = (
        list(metadata.entry_points(group=ENTRY_POINT_GROUP))
        if entry_points is None
        else list(entry_points)
    )
    seen: dict[str, str] = {}
    for ep in sorted(eps, key=lambda e: e.name):
        dist = ep.dist.name if ep.dist is not None else None
        if ep.name in seen:
            raise PluginError(
                f"two plugins use the entry-point name {ep.name!r} ({seen[ep.name]} and "
                f"{dist}); uninstall one of them"
            )
        seen[ep.name] = str(dist)
        if ep.name in deny or (allow is not None and ep.name not in allow):
            continue
        version = ep.dist.version if ep.dist is not None else None
        try:
            try:
                plugin = ep.load()
            except Exception as exc:
                raise PluginError(
                    f"plugin {ep.name!r} ({dist}) failed to import: {exc!r}; reinstall it, or "
                    f"skip it with BAY_DISABLE_PLUGINS={ep.name}"
                ) from exc
            _register(pm, _instance(plugin), ep.name)
        except PluginError as exc:
            if strict:
                raise
            log.error("%s", exc)
            broken.append(PluginInfo(ep.name, dist, version, (), False, str(exc)))
            continue
        infos.append(PluginInfo(ep.name, dist, version, (), False))

    modules = [m.strip() for m in env.get("BAY_PLUGIN_MODULES", "").split(",") if m.strip()]
    for modname in modules:
        try:
            module = importlib.import_module(modname)
        except Exception as exc:
            raise PluginError(
                f"BAY_PLUGIN_MODULES names {modname!r}, which failed to import: {exc!r}; "
                "fix the module or remove it from BAY_PLUGIN_MODULES"
            ) from exc
        extra = [*extra, (modname, module)]

    for name, plugin in extra:
        if pm.get_plugin(name) is not None:
            raise PluginError(f"a plugin named {name!r} is already registered; rename one")
        _register(pm, plugin, name)
        infos.append(PluginInfo(name, None, None, (), False))

    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(
            f"{exc}; the hook names a plugin may implement are in docs/hooks.md"
        ) from exc

    infos = [
        PluginInfo(
            i.name, i.distribution, i.version, _hooks_of(pm, pm.get_plugin(i.name)), i.builtin
        )
        for i in infos
    ]
    return Plugins(pm, infos + broken)


def _instance(plugin: object) -> object:
    """What an entry point names, as registered: a module or an object as it is, a class as
    one instance of it (made per load: what a plugin keeps for a keeper's life lives on it,
    from ``bay_keeper_started`` on, never in a module global)."""
    return plugin() if isinstance(plugin, type) else plugin


def _register(pm: pluggy.PluginManager, plugin: object, name: str) -> None:
    try:
        pm.register(plugin, name=name)
    except pluggy.PluginValidationError as exc:
        raise PluginError(
            f"plugin {name!r} does not match the hook specifications: {exc}; the hooks and "
            f"their arguments are in docs/hooks.md (or skip it: BAY_DISABLE_PLUGINS={name})"
        ) from exc


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def module_plugin(module: ModuleType) -> tuple[str, ModuleType]:
    return module.__name__.rsplit(".", 1)[-1], module
