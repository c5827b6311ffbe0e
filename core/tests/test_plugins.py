"""The plugin manager and the hook contract, in the style of datasette's hook tests: each
hookspec is called through a real plugin manager with a plugin that implements it."""

from __future__ import annotations

import inspect
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from browserbay import hookspecs
from browserbay.hookspecs import hookimpl
from browserbay.model import (
    BrowserInfo,
    Capabilities,
    Failure,
    IntegrationRow,
    KeeperInfo,
    KeyField,
    KeySource,
    LeaseInfo,
    ProfileRef,
    ProviderRow,
    SessionRef,
    TierHint,
    TransportRow,
    VerbCall,
    VerbOutcome,
)
from browserbay.paths import bay_paths
from browserbay.plugins import Hooks, PluginError, load_plugins
from browserbay.refusals import Refusal

HOOKS = sorted(
    n for n, f in inspect.getmembers(hookspecs, inspect.isfunction) if n.startswith("bay_")
)
NO_EPS: list[metadata.EntryPoint] = []


def _module(name: str, **hooks: Any) -> ModuleType:
    mod = ModuleType(name)
    for hook_name, fn in hooks.items():
        setattr(mod, hook_name, hookimpl(fn))
    return mod


def _load(*plugins: ModuleType, env: dict[str, str] | None = None) -> Any:
    return load_plugins(env or {}, extra=[(p.__name__, p) for p in plugins], entry_points=NO_EPS)


def test_every_hookspec_is_typed_and_documented() -> None:
    assert HOOKS  # the list below names each one
    for name in HOOKS:
        fn = getattr(hookspecs, name)
        assert fn.__doc__, name
        assert len(fn.__doc__) > 40, name
        sig = inspect.signature(fn)
        assert sig.return_annotation is not inspect.Signature.empty, name
        for p in sig.parameters.values():
            assert p.annotation is not inspect.Parameter.empty, (name, p.name)


def test_every_hookspec_has_a_facade_method_and_every_facade_method_a_hookspec() -> None:
    """The keeper calls hooks only through ``Hooks``: a hook added to the specs without a
    method there (or a method left behind by a removed hook) fails here, not at run time."""
    methods = sorted(
        n for n, _ in inspect.getmembers(Hooks, inspect.isfunction) if n.startswith("bay_")
    )
    assert methods == HOOKS
    for name in HOOKS:
        spec = inspect.signature(getattr(hookspecs, name))
        facade = inspect.signature(getattr(Hooks, name))
        params = list(facade.parameters.values())[1:]  # after self
        assert [(q.name, q.annotation) for q in params] == [
            (q.name, q.annotation) for q in spec.parameters.values()
        ], name


def test_builtins_and_the_installed_chromium_entry_point_load() -> None:
    plugins = load_plugins({})
    names = {i.name: i for i in plugins.infos}
    assert names["tiers"].builtin
    assert names["tiers"].hooks == ("bay_access_tiers", "bay_tier_hint")
    chromium = names["chromium"]
    assert chromium.distribution == "browserbay-chromium"
    assert chromium.version == "0.1.0"
    assert chromium.hooks == ("bay_doctor_checks", "bay_providers")
    assert "chromium" in plugins.providers
    assert names["keys"].builtin
    assert names["keys"].hooks == ("bay_verbs",)
    # The default plugins declare the key-needing providers and keys.
    assert {"cloak", "cloud:steel"} <= set(plugins.providers)
    assert {"keyring", "file", "env"} <= set(plugins.key_sources)


def test_load_and_disable_filters() -> None:
    assert "chromium" not in {i.name for i in load_plugins({"BAY_LOAD_PLUGINS": ""}).infos}
    assert "chromium" in {i.name for i in load_plugins({"BAY_LOAD_PLUGINS": "chromium"}).infos}
    assert "chromium" not in {
        i.name for i in load_plugins({"BAY_DISABLE_PLUGINS": "chromium"}).infos
    }
    # Built-ins are part of the core: not affected by either.
    assert "tiers" in {i.name for i in load_plugins({"BAY_LOAD_PLUGINS": ""}).infos}


def test_duplicate_entry_point_names_are_refused() -> None:
    ep = metadata.EntryPoint("same", "browserbay_chromium.plugin", "browserbay")
    with pytest.raises(PluginError, match="two plugins use the entry-point name 'same'"):
        load_plugins({}, entry_points=[ep, ep])


def test_a_plugin_that_fails_to_import_is_named() -> None:
    ep = metadata.EntryPoint("broken", "browserbay_no_such_module", "browserbay")
    with pytest.raises(PluginError, match="BAY_DISABLE_PLUGINS=broken"):
        load_plugins({}, entry_points=[ep])


def test_a_misspelled_hook_is_refused_by_check_pending() -> None:
    mod = _module("typo", bay_provider=lambda: [])
    with pytest.raises(PluginError, match="bay_provider"):
        _load(mod)


def test_a_hook_with_an_unknown_argument_is_refused() -> None:
    mod = _module("wrongargs", bay_takeover=lambda lease, viewer, extra: None)
    with pytest.raises(PluginError, match="extra"):
        _load(mod)


def test_plugin_modules_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_devplugin.py").write_text(
        "from browserbay.hookspecs import hookimpl\n"
        "from browserbay.model import TierRow\n"
        "@hookimpl\n"
        "def bay_access_tiers():\n"
        "    return []\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins = load_plugins({"BAY_PLUGIN_MODULES": "my_devplugin"}, entry_points=NO_EPS)
    assert "my_devplugin" in {i.name for i in plugins.infos}
    with pytest.raises(PluginError, match="BAY_PLUGIN_MODULES names 'nope_missing'"):
        load_plugins({"BAY_PLUGIN_MODULES": "nope_missing"}, entry_points=NO_EPS)


def _row(pid: str) -> ProviderRow:
    return ProviderRow(pid, 1, "test", Capabilities(), None, not_runnable="test row")


def test_bay_providers_rows_are_collected_and_duplicates_refused() -> None:
    a = _module("prov_a", bay_providers=lambda: [_row("one"), _row("two")])
    b = _module("prov_b", bay_providers=lambda: [_row("two")])
    assert set(_load(a).providers) == {"one", "two"}
    with pytest.raises(PluginError, match="'two' is contributed by both 'prov_a' and 'prov_b'"):
        _load(a, b)


def test_bay_access_tiers_ladder() -> None:
    tiers = _load().tiers
    assert sorted(tiers) == [1, 2, 3]
    assert tiers[3].name == "computer-use"


def test_bay_tier_hint_is_firstresult_and_worded_as_a_hint() -> None:
    plugins = _load()
    hint = plugins.hooks.bay_tier_hint(failure=Failure("http://x/", 429, "x", "chromium", 1))
    assert isinstance(hint, TierHint)
    assert hint.suggest_tier == 2
    assert "may be" in hint.message
    assert "detected" not in hint.message.lower()
    title = Failure("http://x/", 200, "Just a moment...", "chromium", 1)
    assert plugins.hooks.bay_tier_hint(failure=title) is not None
    assert (
        plugins.hooks.bay_tier_hint(failure=Failure("http://x/", 200, "ok", "chromium", 1)) is None
    )
    # Already on tier 2: no hint to climb.
    assert plugins.hooks.bay_tier_hint(failure=Failure("http://x/", 403, "", "cloak", 2)) is None
    # A plugin's hint wins over the built-in one (firstresult: later-registered runs first).
    mine = _module("hinter", bay_tier_hint=lambda failure: TierHint("mine"))
    assert _load(mine).hooks.bay_tier_hint(failure=Failure("u", 403, "", "c", 1)).message == "mine"


def test_bay_live_view_transports_table() -> None:
    row = TransportRow("screencast", "CDP screencast frames", ("tab",))
    a = _module("lv_a", bay_live_view_transports=lambda: [row])
    assert _load(a).transports == {"screencast": row}
    b = _module("lv_b", bay_live_view_transports=lambda: [row])
    with pytest.raises(PluginError, match="'screencast' is contributed by both"):
        _load(a, b)


def test_bay_key_sources_and_bay_integrations_tables() -> None:
    source = KeySource("env", "cluster", lambda integration, field: None)
    integration = IntegrationRow(
        "cloud:example", (KeyField("api_key", secret=True),), {"api_key": "EXAMPLE_API_KEY"}
    )
    mod = _module(
        "keysrc", bay_key_sources=lambda: [source], bay_integrations=lambda: [integration]
    )
    plugins = _load(mod)
    assert plugins.key_sources == {"env": source}
    assert plugins.integrations["cloud:example"].fields[0].secret
    dup = _module("keys2", bay_integrations=lambda: [integration])
    with pytest.raises(PluginError, match="cloud:example"):
        _load(mod, dup)


SESSION = SessionRef("s", "env")
PROFILE = ProfileRef("ep-s", "ephemeral", "chromium", 1, True)
CALL = VerbCall("click", {"target": "@e1"}, SESSION, PROFILE)


def test_bay_before_verb_returns_refusals_and_bay_after_verb_sees_outcomes() -> None:
    seen: list[Any] = []

    def gate(call: VerbCall) -> Refusal | None:
        if call.verb == "click":
            return Refusal("verb_refused", plugin="gate", reason="needs approval", fix="approve")
        return None

    mod = _module(
        "gate",
        bay_before_verb=gate,
        bay_after_verb=lambda call, outcome: seen.append((call.verb, outcome.ok, outcome.code)),
    )
    plugins = _load(mod)
    refusal = plugins.hooks.bay_before_verb(call=CALL)
    assert refusal is not None
    assert refusal.code == "verb_refused"
    other = VerbCall("get", {}, SESSION, PROFILE)
    assert plugins.hooks.bay_before_verb(call=other) is None
    plugins.hooks.bay_after_verb(call=CALL, outcome=VerbOutcome(False, "verb_refused", 1.0))
    assert seen == [("click", False, "verb_refused")]


def test_lifecycle_hooks_browser_lease_takeover_handback() -> None:
    events: list[tuple[str, Any]] = []
    mod = _module(
        "life",
        bay_browser_started=lambda browser: events.append(("started", browser.browser_id)),
        bay_browser_stopped=lambda browser, reason: events.append(("stopped", reason)),
        bay_lease_changed=lambda lease, change: events.append(("lease", change)),
        bay_takeover=lambda lease, viewer: events.append(("takeover", viewer)),
        bay_handback=lambda lease, viewer: events.append(("handback", viewer)),
        bay_keeper_started=lambda keeper: events.append(("keeper", keeper.pid)),
        bay_keeper_stopping=lambda: events.append(("stopping", None)),
    )
    hook = _load(mod).hooks
    browser = BrowserInfo("bb-1", "chromium", 42, True)
    lease = LeaseInfo(PROFILE, SESSION, "user", ("t1",))
    hook.bay_keeper_started(keeper=KeeperInfo(7, "0.1.0", bay_paths({"HOME": "/nowhere"})))
    hook.bay_browser_started(browser=browser)
    hook.bay_browser_stopped(browser=browser, reason="idle")
    hook.bay_lease_changed(lease=lease, change="attached")
    hook.bay_takeover(lease=lease, viewer="v1")
    hook.bay_handback(lease=lease, viewer="v1")
    hook.bay_keeper_stopping()
    assert events == [
        ("keeper", 7),
        ("started", "bb-1"),
        ("stopped", "idle"),
        ("lease", "attached"),
        ("takeover", "v1"),
        ("handback", "v1"),
        ("stopping", None),
    ]


class _Stateful:
    """A plugin class an entry point names: one instance per load, its state on it."""

    def __init__(self) -> None:
        self.started: KeeperInfo | None = None

    @hookimpl
    def bay_keeper_started(self, keeper: KeeperInfo) -> None:
        self.started = keeper


def test_an_entry_point_naming_a_class_registers_one_instance_per_load() -> None:
    ep = metadata.EntryPoint("stateful", f"{__name__}:_Stateful", "browserbay")
    first, second = load_plugins({}, entry_points=[ep]), load_plugins({}, entry_points=[ep])
    one, two = first.pm.get_plugin("stateful"), second.pm.get_plugin("stateful")
    assert isinstance(one, _Stateful)
    assert isinstance(two, _Stateful)
    assert one is not two
    info = KeeperInfo(7, "0.1.0", bay_paths({"HOME": "/nowhere"}))
    first.hooks.bay_keeper_started(keeper=info)
    assert one.started is info
    assert two.started is None


def test_a_notification_hook_that_raises_is_logged_and_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[str] = []

    def boom() -> None:
        raise RuntimeError("on purpose")

    plugins = _load(
        _module("first", bay_keeper_stopping=lambda: seen.append("first")),
        _module("boom", bay_keeper_stopping=boom),
    )
    plugins.hooks.bay_keeper_stopping()
    assert seen == ["first"]
    assert "plugin 'boom' failed in bay_keeper_stopping; carrying on" in caplog.text


def test_listing_names_distribution_version_and_hooks() -> None:
    listing = load_plugins({}).listing()
    chromium = next(p for p in listing if p["name"] == "chromium")
    assert chromium == {
        "name": "chromium",
        "distribution": "browserbay-chromium",
        "version": "0.1.0",
        "hooks": ["bay_doctor_checks", "bay_providers"],
        "builtin": False,
        "error": None,
    }


def test_capability_cells() -> None:
    caps = Capabilities(has_cdp=False)
    assert caps.cell("has_cdp") is False
    assert caps.cell("screenshots") is True
    with pytest.raises(KeyError):
        caps.cell("key_scope")  # not a boolean cell
    assert caps.as_row()["lease_kind"] == "tab"


def _verb(name: str, scope: str = "plugin") -> Any:
    from browserbay.model import PluginVerb
    from browserbay.verbs import Verb

    async def handler(ctx: Any) -> tuple[dict[str, Any], str]:
        return {}, ""

    return PluginVerb(Verb(name, scope, "test verb"), handler)


def test_bay_verbs_are_collected_named_and_checked() -> None:
    mod = _module("verbs_a", bay_verbs=lambda: [_verb("greet")])
    plugins = _load(mod)
    assert plugins.verbs["greet"].verb.plugin == "verbs_a"
    assert plugins.verb_table()["greet"].scope == "plugin"
    assert "open" in plugins.verb_table()
    with pytest.raises(PluginError, match="'open', which is one of the core's"):
        _load(_module("verbs_b", bay_verbs=lambda: [_verb("open")]))
    with pytest.raises(PluginError, match="'greet' is contributed by both"):
        _load(mod, _module("verbs_c", bay_verbs=lambda: [_verb("greet")]))
    with pytest.raises(PluginError, match="must have scope 'plugin'"):
        _load(_module("verbs_d", bay_verbs=lambda: [_verb("odd", scope="page")]))


def test_the_keeper_skips_a_broken_plugin_and_lists_why() -> None:
    broken = metadata.EntryPoint("broken", "browserbay_no_such_module", "browserbay")
    fine = metadata.EntryPoint("chromium", "browserbay_chromium.plugin", "browserbay")
    plugins = load_plugins({}, entry_points=[broken, fine], strict=False)
    assert "chromium" in plugins.providers
    info = next(i for i in plugins.listing() if i["name"] == "broken")
    assert info["error"] is not None
    assert "BAY_DISABLE_PLUGINS=broken" in info["error"]
    assert info["hooks"] == []
    wrong = _module("wrongsig", bay_takeover=lambda lease, viewer, extra: None)
    with pytest.raises(PluginError):
        _load(wrong)
