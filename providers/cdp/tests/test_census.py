"""The CDP census: one table, one class per method, covering the installed Chromium's own
``/json/protocol``; the fence's verdict for every row while a human holds the controls and
while the agent does; the provider row and the core's conformance suite."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from browserbay.testing import check_provider
from browserbay_cdp import plugin
from browserbay_cdp.census import CLASSES, FENCED, ON_BROWSER, RULES, load, parse, protocol_methods
from browserbay_cdp.proxy import fence
from browserbay_testing import assert_refused
from browserbay_testing.cdp import DebugBrowser, start_debug_browser


def test_the_table_is_one_row_per_method_each_in_a_closed_class() -> None:
    census = load()
    counts = Counter(census.rows.values())
    print(f"census of {census.chrome}: {len(census.rows)} methods", dict(sorted(counts.items())))
    assert census.chrome.startswith("Chrome/")
    assert set(counts) == set(CLASSES), "every class has rows"
    assert len(census.rows) > 600
    with pytest.raises(ValueError, match="two rows"):
        parse("A.b\tread\t-\nA.b\tview\t-\n")
    with pytest.raises(ValueError, match="is not"):
        parse("A.b\tsometimes\t-\n")
    with pytest.raises(ValueError, match="is not"):
        parse("A.b\tread\n")  # every row has its rule
    with pytest.raises(ValueError, match="is not"):
        parse("A.b\tread\tmaybe\n")
    with pytest.raises(ValueError, match="no rule"):
        parse("A.b\trefused\turl\n")


def test_every_method_that_carries_a_url_or_a_file_has_its_rule() -> None:
    """The census of parameters (``/json/protocol``, Chrome 156): the methods that make the
    browser load a URL, and those that hand a page files; browser-wide ones are refused."""
    census = load()
    rules = {m: census.rule(m) for m in census.rows}
    assert set(rules.values()) == set(RULES)
    assert {m for m, r in rules.items() if r == "url"} == {
        "Page.navigate",
        "Target.createTarget",
        "Network.loadNetworkResource",
        "Fetch.continueRequest",
        "Fetch.fulfillRequest",
        "Fetch.continueResponse",
    }
    assert {m for m, r in rules.items() if r == "files"} == {
        "DOM.setFileInputFiles",
        "Input.dispatchDragEvent",
    }
    assert {m for m, r in rules.items() if r in ON_BROWSER} == {
        "Browser.getVersion",
        "Browser.getWindowForTarget",
        "Browser.grantPermissions",
        "Browser.resetPermissions",
        "Browser.setPermission",
        "Browser.setDownloadBehavior",
        "Schema.getDomains",
        "Storage.getCookies",
        "Storage.setCookies",
        "Storage.clearCookies",
        "SystemInfo.getFeatureState",
    }
    for method in census.rows:
        if method.startswith(("Tracing.", "Extensions.")):  # every session's; the extensions'
            assert census.klass(method) == "refused", method
    for method in (
        "Page.setDownloadBehavior",
        "Browser.getBrowserCommandLine",
        "Browser.setWindowBounds",
        "SystemInfo.getInfo",
        "SystemInfo.getProcessInfo",
        "Target.setRemoteLocations",
        "Target.exposeDevToolsProtocol",
        "Extensions.loadUnpacked",
        "PWA.launchFilesInApp",
    ):
        assert census.klass(method) == "refused", method


def test_the_census_covers_every_method_of_the_installed_chromium(tmp_path: Path) -> None:
    browser = start_debug_browser(tmp_path / "ud")
    try:
        version = browser.get("/json/version")["Browser"]
        methods = protocol_methods(browser.get("/json/protocol"))
    finally:
        browser.close()
    missing, stale = load().compare(methods)
    print(f"{version}: {len(methods)} methods, {len(missing)} with no row, {len(stale)} stale")
    for method in missing:
        print(f"NO ROW: {method}")
    for method in stale:
        print(f"stale row (not in {version}): {method}")
    assert not missing, f"methods of {version} with no row in census.tsv: {missing}"


def test_every_row_is_judged_by_its_class() -> None:
    census = load()
    by = "a human in the live view (viewer 1)"
    for method, klass in census.rows.items():
        driving = fence(census, method, None, "work")
        paused = fence(census, method, by, "work")
        if klass == "refused":
            assert driving is not None, method
            assert paused is not None, method
            assert_refused(driving, "method_refused")
            assert_refused(paused, "method_refused")
        elif klass in FENCED:
            assert driving is None, method
            assert paused is not None, method
            frame = assert_refused(paused, "browser_interrupted")
            assert method in frame["message"]
            assert by in frame["message"]
        else:
            assert driving is None, (method, klass)
            assert paused is None, (method, klass)


def test_a_method_with_no_row_is_forwarded_while_you_drive_and_refused_by_name_while_paused() -> (
    None
):
    census = load()
    assert fence(census, "Future.doSomething", None, "work") is None
    refused = fence(census, "Future.doSomething", "a handoff you asked for", "work")
    assert refused is not None
    frame = assert_refused(refused, "method_refused")
    assert "Future.doSomething" in frame["message"]
    assert census.chrome in frame["message"]
    assert "census.tsv" in frame["message"]


def test_the_provider_row_and_the_conformance_suite(
    tmp_path: Path, debug_browser: DebugBrowser, demo: str
) -> None:
    (row,) = plugin.CdpPlugin().bay_providers()
    assert row.id == "cdp"
    assert row.tier == 1
    caps = row.capabilities
    assert not caps.owns_dir
    assert not caps.ephemeral_contexts
    assert caps.cdp_endpoint
    assert row.options == ("cdp_url",)
    before = {p["id"] for p in debug_browser.pages()}
    check_provider(row, tmp_path, f"{demo}/form.html", options={"cdp_url": debug_browser.http})
    assert debug_browser.answers(), "closing the handle must only disconnect"
    assert before <= {p["id"] for p in debug_browser.pages()}, "no tab of its own was closed"


def test_every_verb_of_the_plugin_is_in_docs_cdp_md_with_its_usage_line() -> None:
    from browserbay_cli.parse import usage_line

    text = (Path(__file__).resolve().parents[3] / "docs" / "cdp.md").read_text()
    for pv in plugin.CdpPlugin().bay_verbs():
        heading = f"### {pv.verb.name}\n"
        assert heading in text, f"docs/cdp.md has no {heading.strip()!r}"
        section = text.split(heading, 1)[1].split("\n#", 1)[0]
        assert usage_line(pv.verb) in section, pv.verb.name
        assert "Example:" in section, pv.verb.name
