"""``bay doctor`` on this machine, for real (Chromium, Xvfb, AT-SPI bindings, the key stores),
with negative controls: a browser path that does not exist, an Xvfb that is not there, a
plugin whose bay_doctor_checks raises. It never starts a keeper."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browserbay_testing import Bay


def _rows(data: dict[str, Any]) -> dict[tuple[str, str], dict[str, str]]:
    return {(c["area"], c["name"]): c for c in data["checks"]}


def _doctor(bay: Bay, **env: str) -> tuple[int, dict[str, Any]]:
    r = bay("doctor", session=None, env=env, timeout=120)
    frame = r.frame
    assert frame["ok"] is True, frame
    return r.code, frame["data"]


def test_doctor_on_this_machine(tmp_path: Path) -> None:
    bay = Bay(tmp_path, BAY_PLUGIN_MODULES="doctorrows")
    code, data = _doctor(bay)
    rows = _rows(data)
    browser = rows[("browser", "chromium")]
    assert browser["status"] == "ok", browser
    assert browser["detail"].startswith("Chromium "), browser  # chromium --version ran
    assert rows[("display", "xvfb starts")]["status"] == "ok", rows[("display", "xvfb starts")]
    assert rows[("at-spi", "atspi launcher")]["status"] == "ok"
    assert rows[("at-spi", "pyatspi")]["status"] == "ok", rows[("at-spi", "pyatspi")]
    assert rows[("keychain", "file store")]["status"] == "ok"
    assert rows[("keychain", "secret service")]["status"] in ("ok", "warn")
    loaded = rows[("plugins", "loaded")]
    assert "chromium" in loaded["detail"]
    assert "local-window" in loaded["detail"]
    assert rows[("providers", "chromium (tier 1)")]["status"] == "ok"
    # a cloud row without its key: the same judgement as bay backend, the fix sets the key
    steel = rows[("providers", "cloud:steel (tier 2)")]
    assert steel["status"] == "warn", steel
    assert steel["fix"] == "bay keys set cloud:steel api_key", steel
    # ... and with the cluster's key in the keeper's environment (keys-env), it can run
    _, keyed = _doctor(bay, BAY_INTEGRATION_CLOUD_STEEL_API_KEY="sk-doctor-0123456789")
    assert _rows(keyed)[("providers", "cloud:steel (tier 2)")]["status"] == "ok"
    assert rows[("keeper", "keeper")]["detail"].startswith("not running")
    assert rows[("disk", "data dir")]["status"] in ("ok", "warn")
    # a plugin's own row, with its fix
    gadget = rows[("gadgets", "sprocket")]
    assert gadget == {
        "area": "gadgets",
        "name": "sprocket",
        "status": "warn",
        "detail": "sprocket is loose",
        "fix": "tighten-sprocket",
    }
    assert data["worst"] in ("ok", "warn")
    assert code == 0
    # it started no keeper
    assert not list(tmp_path.rglob("keeper.sock"))


def test_doctor_names_a_missing_browser_and_its_fix(tmp_path: Path) -> None:
    bay = Bay(tmp_path)
    missing = tmp_path / "no-such-chrome"
    code, data = _doctor(bay, BAY_CHROMIUM_PATH=str(missing))
    browser = _rows(data)[("browser", "chromium")]
    assert browser["status"] == "fail"
    assert str(missing) in browser["detail"]
    assert "BAY_CHROMIUM_PATH" in browser["fix"]
    assert data["worst"] == "fail"
    assert code == 1


def test_doctor_names_a_missing_xvfb(tmp_path: Path) -> None:
    bay = Bay(tmp_path)
    _, data = _doctor(bay, BAY_WINDOW_XVFB=str(tmp_path / "no-Xvfb"))
    rows = _rows(data)
    assert rows[("display", "xvfb")]["status"] == "fail"
    starts = rows[("display", "xvfb starts")]
    assert starts["status"] == "fail"
    assert "apt-get install -y xvfb" in starts["fix"]


def test_doctor_turns_a_raising_hook_into_a_fail_row(tmp_path: Path) -> None:
    bay = Bay(tmp_path, BAY_PLUGIN_MODULES="doctorrows")
    code, data = _doctor(bay, BAY_DOCTOR_RAISE="1")
    rows = _rows(data)
    row = rows[("plugins", "doctorrows")]
    assert row["status"] == "fail"
    assert "the probe exploded" in row["detail"]
    assert "BAY_DISABLE_PLUGINS=doctorrows" in row["fix"]
    assert rows[("browser", "chromium")]["status"] == "ok"  # the others still ran
    assert code == 1


def test_doctor_reports_a_running_keeper_without_touching_it(tmp_path: Path) -> None:
    bay = Bay(tmp_path)
    started = bay.ok("keeper", "start", session=None)
    try:
        _, data = _doctor(bay)
        row = _rows(data)[("keeper", "keeper")]
        assert row["status"] == "ok"
        assert f"pid {started['pid']}" in row["detail"], (row, started)
        modes = [c for c in data["checks"] if c["name"].startswith("mode of")]
        assert modes
        assert all(c["status"] == "ok" for c in modes), modes
        assert bay.ok("keeper", "status", session=None)["pid"] == started["pid"]
    finally:
        bay.stop()


def test_doctor_text_prints_the_fix_under_a_failing_row(tmp_path: Path) -> None:
    bay = Bay(tmp_path)
    r = bay("doctor", session=None, json_=False, env={"BAY_CHROMIUM_PATH": "/nonexistent"})
    assert r.code == 1
    lines = r.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("fail browser"))
    assert lines[at + 1].strip().startswith("fix: point BAY_CHROMIUM_PATH")
    assert lines[-1].endswith("fail")
    assert "ok," in lines[-1]


def test_a_broken_plugin_is_a_fail_row_with_its_error() -> None:
    from importlib.metadata import EntryPoint

    from browserbay.doctor import plugin_rows
    from browserbay.plugins import load_plugins

    broken = EntryPoint("ghost", "browserbay_ghost_missing.plugin", "browserbay")
    plugins = load_plugins({}, entry_points=[broken], strict=False)
    rows = {r.name: r for r in plugin_rows(plugins)}
    assert rows["loaded"].status == "ok"
    ghost = rows["ghost"]
    assert ghost.status == "fail"
    assert "browserbay_ghost_missing" in ghost.detail
    assert "BAY_DISABLE_PLUGINS=ghost" in ghost.fix


def test_a_plugin_module_that_does_not_import_fails_the_plugin_manager_row(
    tmp_path: Path,
) -> None:
    bay = Bay(tmp_path, BAY_PLUGIN_MODULES="no_such_module_here")
    code, data = _doctor(bay)
    row = _rows(data)[("plugins", "plugin manager")]
    assert row["status"] == "fail"
    assert "no_such_module_here" in row["detail"]
    assert ("keeper", "keeper") in _rows(data)  # the core's other rows are still there
    assert code == 1


def test_doctor_on_a_session_socket_checks_that_socket(tmp_path: Path) -> None:
    """An agent whose only way in is the socket the owner granted (``BAY_SOCKET``, in a
    sandbox that has no home) is told whether THAT socket answers and which session it is
    bound to — not whether the owner's own socket, which it cannot reach, is listening."""
    bay = Bay(tmp_path)
    sid = "doc-sock"
    directory = tmp_path / sid
    directory.mkdir(mode=0o700)
    path = directory / "bay.sock"
    bay.ok("open", "about:blank", session=None)
    try:
        bay.ok("session", "grant", sid, "--socket", str(path), session=None)
        _, data = _doctor(bay, BAY_SOCKET=str(path))
        row = _rows(data)[("keeper", "session socket")]
        assert row["status"] == "ok", row
        assert str(path) in row["detail"], row
        assert f"session {sid}" in row["detail"], row
        assert ("keeper", "keeper") not in _rows(data)  # the owner's socket is not its business
        bay.ok("session", "revoke", sid, session=None)
        code, data = _doctor(bay, BAY_SOCKET=str(path))
        row = _rows(data)[("keeper", "session socket")]
        assert row["status"] == "fail", row
        assert "bay session grant" in row["fix"], row
        assert code != 0
    finally:
        bay.stop()
