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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from types import ModuleType
from typing import Any, TypeVar

import pluggy

from browserbay import hookspecs
from browserbay.keys import KeyAdmin, KeyBook
from browserbay.model import (
    IntegrationRow,
    KeySource,
    PluginVerb,
    ProviderRow,
    TierRow,
    TransportRow,
)
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


class Plugins:
    """A loaded plugin manager plus the tables collected from row hooks."""

    def __init__(self, pm: pluggy.PluginManager, infos: list[PluginInfo]):
        self.pm = pm
        self.infos = infos
        self.hook: Any = pm.hook
        # Row hooks are called once, here: a clash is reported at load time, not at first
        # use, and a verb never re-runs them. (They are read per implementation, in pluggy's
        # call order, so that a duplicate id can name both plugins.)
        self.providers: dict[str, ProviderRow] = _collect(pm, "bay_providers", lambda r: r.id)
        self.tiers: dict[int, TierRow] = _collect(pm, "bay_access_tiers", lambda r: r.tier)
        self.transports: dict[str, TransportRow] = _collect(
            pm, "bay_live_view_transports", lambda r: r.kind
        )
        self.key_sources: dict[str, KeySource] = _collect(pm, "bay_key_sources", lambda r: r.name)
        self.integrations: dict[str, IntegrationRow] = _collect(
            pm, "bay_integrations", lambda r: r.id
        )
        #: Key resolution over the two tables above (the keeper's one reveal is
        #: ``keys.child_env``); ``key_admin`` is what plugin verbs get: views, never values.
        self.keys = KeyBook(self.key_sources, self.integrations)
        self.key_admin = KeyAdmin(self.keys)
        verb_owner: dict[str, str] = {}
        self.verbs: dict[str, PluginVerb] = _collect(
            pm, "bay_verbs", lambda r: r.verb.name, verb_owner
        )
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

    def notify(self, hook_name: str, **kwargs: Any) -> None:
        """Call a notification hook (after-verb, browser, lease…). A plugin that raises is
        logged and skipped: an audit sink's bug must not take the keeper down."""
        hook = getattr(self.hook, hook_name)
        for impl in reversed(hook.get_hookimpls()):
            try:
                impl.function(**{k: kwargs[k] for k in impl.argnames})
            except Exception:
                log.exception("plugin %r failed in %s; carrying on", impl.plugin_name, hook_name)

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


K = TypeVar("K")
R = TypeVar("R")


def _collect(
    pm: pluggy.PluginManager, hook_name: str, key: Any, owner: dict[Any, str] | None = None
) -> dict[Any, Any]:
    """Call a row hook on every plugin and build one table, refusing duplicate ids.
    ``owner`` (when given) is filled with the plugin name of each row."""
    table: dict[Any, Any] = {}
    owner = {} if owner is None else owner
    hook = getattr(pm.hook, hook_name)
    for impl in hook.get_hookimpls():
        rows = impl.function() or ()
        for row in rows:
            k = key(row)
            if k in table:
                raise PluginError(
                    f"{hook_name}: {k!r} is contributed by both {owner[k]!r} and "
                    f"{impl.plugin_name!r}; uninstall one, or disable it with "
                    f"BAY_DISABLE_PLUGINS={impl.plugin_name}"
                )
            table[k] = row
            owner[k] = impl.plugin_name
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
            _register(pm, plugin, ep.name)
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
