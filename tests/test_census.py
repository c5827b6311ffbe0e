"""Regression tests for what the security census (campaigns/census.py) found."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from browserbay.keeper.pageverbs import mask_passwords
from browserbay_testing import Bay


@pytest.fixture(scope="module")
def bay() -> Iterator[Bay]:
    """This module's keeper traces actions (BAY_TRACE=1): the census searches the trace too."""
    home = Path(tempfile.mkdtemp(prefix="bay-cs-", dir="/tmp"))
    b = Bay(home, BAY_TRACE="1")
    yield b
    b.stop()
    shutil.rmtree(home, ignore_errors=True)


def test_a_typed_password_never_shows_in_a_snapshot(bay: Bay, demo: str) -> None:
    """The accessibility snapshot read a password field's value out in clear (Playwright's
    aria snapshot takes input.value): a password typed through stdin came back in the answer."""
    secret = "pw-census-7f3a9c"
    bay.ok("open", f"{demo}/login.html", session="census")
    bay.ok("fill", "input[name=password]", "-", stdin=secret, session="census")
    for flags in ((), ("-i",)):
        r = bay("snapshot", *flags, session="census")
        assert r.code == 0
        assert secret not in r.stdout
        assert "••••" in r.frame["data"]["snapshot"]
    bay.ok("close", session="census")


def test_mask_passwords_masks_textboxes_holding_a_password_value_and_nothing_else() -> None:
    raw = (
        '- textbox "Name" [ref=e2]: hunter2\n- textbox "Password" [ref=e3]: hunter2\n'
        "- text: hunter2"
    )
    assert mask_passwords(raw, ["hunter2"]) == (
        '- textbox "Name" [ref=e2]: ••••\n- textbox "Password" [ref=e3]: ••••\n- text: hunter2'
    )
    assert mask_passwords(raw, []) == raw


def test_a_typed_password_is_in_no_action_trace_nor_its_report(bay: Bay, demo: str) -> None:
    """The census searches the trace plugin's files too: a password typed through stdin, then
    sent by a GET form (so it was in the URL), is in no record, frame or HTML report."""
    secret = "pw-census-trace-41c7e2"
    s = "census-trace"
    bay.ok("open", f"{demo}/login.html", session=s)
    bay.ok("fill", "input[name=user]", "-", stdin=secret + "-user", session=s)
    bay.ok("fill", "input[name=password]", "-", stdin=secret, session=s)
    bay.ok("click", "button", session=s)
    # The click answers once /do-login commits (as Playwright's click does); its page then
    # sends the browser on to /account by script: wait for that.
    end = time.monotonic() + 15
    url = ""
    while time.monotonic() < end and not url.endswith("/account"):
        url = bay.ok("get", "url", session=s)["value"]
    assert url.endswith("/account"), url
    r = bay("trace", "show", "--last", "10", session=s)
    assert r.code == 0
    report = r.frame["data"]
    verbs = [a["verb"] for a in report["actions"]]
    assert verbs == ["open", "fill", "fill", "click"]
    click = report["actions"][-1]
    assert click["url_after"].startswith(demo)  # where it went, without the query
    assert "?" not in click["url_after"]
    traces = bay.home / "data" / "traces"
    files = [p for p in traces.rglob("*") if p.is_file()]
    # The positive control: there is something to search (records, frames, the report).
    assert sum(p.suffix == ".json" for p in files) >= 4
    assert sum(p.suffix == ".jpg" for p in files) >= 8
    assert Path(report["path"]) in files
    for p in files:
        assert secret.encode() not in p.read_bytes(), f"the password is in {p}"
    assert secret not in r.stdout
    bay.ok("close", session=s)
