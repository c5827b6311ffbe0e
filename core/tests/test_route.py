"""The verb route (browserbay.keeper.route): every verb the keeper serves has exactly one
handler, of the kind its scope needs, or the keeper does not start."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from browserbay import verbs
from browserbay.keeper.app import App
from browserbay.keeper.channels import OWNER, Channel
from browserbay.keeper.pageverbs import PAGE_VERBS
from browserbay.keeper.route import OnKeeper, OnPage, OnPlugin, RouteError, VerbRoute
from browserbay.model import PluginVerb
from browserbay.paths import BayPaths
from browserbay.plugins import load_plugins
from browserbay.refusals import Refusal
from browserbay.registry import open_sqlite
from browserbay.settings import BaySettings


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> App:
    tmp_path = tmp_path_factory.mktemp("route")
    paths = BayPaths(tmp_path / "s", tmp_path / "d", tmp_path / "r", tmp_path / "l", tmp_path)
    for d in (paths.state, paths.data, paths.runtime, paths.logs):
        d.mkdir()
    return App(load_plugins({}), open_sqlite(paths.registry), paths, BaySettings())


async def _answer(
    args: dict[str, Any], handle: str | None, channel: Channel
) -> tuple[dict[str, Any], str]:
    return {}, ""


def test_the_keeper_routes_every_verb_of_the_table(app: App) -> None:
    """The composed keeper builds its route: the core's and the plugins' verbs each have a
    handler (a missing one would have raised RouteError), the client's own have none."""
    table = app.plugins.verb_table()
    for name, verb in table.items():
        if verb.scope == verbs.LOCAL:
            continue
        handler = app.route[name]
        assert handler is not None
    assert set(PAGE_VERBS) == {v.name for v in verbs.VERBS if v.scope == verbs.PAGE}
    assert all(isinstance(app.route[n], OnPage) for n in PAGE_VERBS)
    assert all(isinstance(app.route[n], OnPlugin) for n in app.plugins.verbs)


def test_a_verb_with_no_handler_stops_the_keeper(app: App) -> None:
    """Both directions fail at start: a row of the table with no handler, and (the control
    below) a handler that no row names. The same handlers with the full table build."""
    table = app.route.table
    handlers = {name: app.route[name] for name in table if table[name].scope != verbs.LOCAL}
    VerbRoute(table, handlers)  # the control: complete
    without = {n: h for n, h in handlers.items() if n != "snapshot"}
    with pytest.raises(RouteError, match="the verb 'snapshot' has no handler"):
        VerbRoute(table, without)
    without_row = {n: v for n, v in table.items() if n != "snapshot"}
    with pytest.raises(RouteError, match="the handler for 'snapshot' has no verb in the table"):
        VerbRoute(without_row, handlers)


def test_a_handler_with_no_verb_stops_the_keeper(app: App) -> None:
    table = app.route.table
    handlers = {name: app.route[name] for name in table if table[name].scope != verbs.LOCAL}
    with pytest.raises(RouteError, match="the handler for 'frobnicate' has no verb"):
        VerbRoute(table, {**handlers, "frobnicate": OnKeeper(_answer)})
    # A verb the client runs itself has no handler in the keeper.
    with pytest.raises(RouteError, match="'doctor' has no verb in the table the keeper serves"):
        VerbRoute(table, {**handlers, "doctor": OnKeeper(_answer)})


def test_a_handler_of_the_wrong_kind_stops_the_keeper(app: App) -> None:
    table = app.route.table
    handlers = {name: app.route[name] for name in table if table[name].scope != verbs.LOCAL}
    with pytest.raises(RouteError, match="the page verb 'click' has a OnKeeper handler"):
        VerbRoute(table, {**handlers, "click": OnKeeper(_answer)})
    plugin = PluginVerb(verbs.Verb("greet", verbs.PLUGIN, "test verb"), _plugin_handler)
    with pytest.raises(RouteError, match="the verb 'greet' has no handler"):
        VerbRoute({**table, "greet": plugin.verb}, handlers)
    VerbRoute({**table, "greet": plugin.verb}, {**handlers, "greet": OnPlugin(plugin)})


async def _plugin_handler(ctx: Any) -> tuple[dict[str, Any], str]:
    return {}, ""


def test_a_plugin_asking_for_a_verb_that_is_no_keeper_verb_is_refused(app: App) -> None:
    """``ctx.host.keeper_verb(name, …)`` for a name that is not a keeper verb is an unknown
    verb (never a KeyError); a keeper verb is answered."""
    for name in ("status", "no-such-verb"):
        with pytest.raises(Refusal) as refused:
            anyio.run(app.route.run_keeper_verb, name, {}, None, OWNER)
        assert refused.value.code == "bad_frame"
        assert f"unknown verb {name!r}" in refused.value.message
    data, _text = anyio.run(app.route.run_keeper_verb, "verbs", {}, None, OWNER)
    assert {row["name"] for row in data["verbs"]} >= {"open", "keeper", "verbs"}


def test_a_plugin_cannot_keep_a_sessions_login_through_keeper_verb(app: App) -> None:
    """``new`` reads who asks (OnKeeperAsked); a plugin's ``ctx.keeper_verb("new", …)`` names
    nobody, so ``--from-session`` there is ``usage`` and nothing is made."""
    before = set(app.profiles.rows)
    with pytest.raises(Refusal) as refused:
        anyio.run(
            app.route.run_keeper_verb, "new", {"label": "x", "from_session": True}, None, OWNER
        )
    assert refused.value.code == "usage"
    assert "needs a session" in refused.value.message
    assert set(app.profiles.rows) == before
