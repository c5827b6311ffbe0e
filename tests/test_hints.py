"""Site hints and the tier rule: a 403/429 or a challenge-like page adds a hint worded as a
hint; `bay blocked` records an agent's claim; nothing ever moves a profile to another tier or
provider by itself. The tier of a hint is stored only while it names no backend, and a
profile's tier is derived from its provider's row, never stored."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from browserbay.model import SiteHint
from browserbay.refusals import Refusal
from browserbay_testing import Bay, assert_refused

# -- the rule at the model level ----------------------------------------------------------


def test_a_tier_is_legal_only_while_no_backend_is_named() -> None:
    with pytest.raises(Refusal) as refused:
        SiteHint("shop.example", 2, "cloak", "a", 0.0, "captcha")
    assert "not both" in assert_refused(refused.value, "usage")["message"]
    # Negative controls: either alone, or neither, is a legal hint.
    assert SiteHint("shop.example", 2, None, "a", 0.0, "captcha").tier == 2
    assert SiteHint("shop.example", None, "cloak", "a", 0.0, "captcha").backend == "cloak"
    assert SiteHint("shop.example", None, None, "a", 0.0, "captcha").tier is None
    with pytest.raises(Refusal):
        SiteHint("shop.example", 4, None, "a", 0.0, "x")  # type: ignore[arg-type]
    with pytest.raises(Refusal):
        SiteHint("Shop.Example", 2, None, "a", 0.0, "x")  # a host is stored lower-case


# -- end to end -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def challenge() -> Iterator[str]:
    """A local page that looks like a challenge page (its title) while answering 200."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<!doctype html><title>Just a moment...</title><p>checking your browser"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _provider_of(b: Bay, profile: str) -> tuple[str, int]:
    (row,) = [p for p in b.ok("profiles")["profiles"] if p["id"] == profile]
    return row["provider"], row["tier"]


@pytest.mark.browser
def test_hints_and_claims_never_move_a_profile(bay: Bay, demo: str, challenge: str) -> None:
    s = "hints-e2e"
    work = bay.ok("new", "hinted")
    bay.ok("use", work["id"], session=s)

    forbidden = bay.ok("open", f"{demo}/status/403", session=s)
    assert forbidden["status"] == 403
    assert "may be bot protection" in forbidden["hint"]  # a possibility, never a detection
    assert "detected" not in forbidden["hint"].lower()
    assert "Nothing was changed" in forbidden["hint"]
    assert forbidden["hint_tier"] == 2
    limited = bay.ok("open", f"{demo}/status/429", session=s)
    assert "HTTP 429" in limited["hint"]
    looks = bay.ok("open", challenge, session=s)
    assert looks["status"] == 200
    assert "Just a moment" in looks["hint"]
    fine = bay.ok("open", f"{demo}/", session=s)  # negative control: a 200 page, no hint
    assert fine["status"] == 200
    assert "hint" not in fine
    assert "hint_tier" not in fine
    missing = bay.ok("open", f"{demo}/status/404", session=s)  # not a block either
    assert "hint" not in missing
    assert _provider_of(bay, work["id"]) == ("chromium", 1)  # hints changed nothing

    claim = bay.ok("blocked", "--url", f"{demo}/status/403", "--why", "HTTP 403", session=s)
    host = claim["host"]
    assert host == "127.0.0.1"
    assert claim["recorded"]["by"] == s
    assert (claim["recorded"]["tier"], claim["recorded"]["backend"]) == (None, None)
    assert len(claim["hints"]) == 1
    second = bay.ok(
        "blocked", "--url", challenge, "--why", "a challenge", "--backend", "cloak", session=s
    )
    assert second["recorded"]["tier"] is None  # a backend's tier is derived, not stored
    assert second["recorded"]["suggests_tier"] == 2
    third = bay.ok("blocked", "--url", challenge, "--why", "still", "--tier", "3", session="other")
    assert [h["by"] for h in third["hints"]] == [s, s, "other"]  # the table for that host
    assert third["hints"][2]["tier"] == 3

    both = bay("blocked", "--url", challenge, "--tier", "2", "--backend", "cloak", session=s)
    assert "not both" in assert_refused(both, "usage")["message"]
    unknown = bay("blocked", "--url", challenge, "--backend", "nope", session=s)
    assert_refused(unknown, "usage")
    assert_refused(bay("blocked", "--why", "no url", session=s), "usage")
    after = bay.ok("blocked", "--url", challenge, "--why", "count", session=s)
    assert len(after["hints"]) == 4  # the refused claims recorded nothing

    listed = bay.ok("hints", session="user")["hints"]
    assert [h["host"] for h in listed].count(host) == 4
    assert bay.ok("hints", "nowhere.example", session="user")["hints"] == []
    assert_refused(bay("hints", "--forget", session="user"), "usage")  # which host?

    # Nothing escalated by itself: the profile, its provider and its tier are as they were,
    # and the page verbs still run on chromium.
    assert _provider_of(bay, work["id"]) == ("chromium", 1)
    assert bay.ok("open", f"{demo}/", session=s)["status"] == 200
    status = bay.ok("status", session=s)
    assert {lease["profile"]["provider"] for lease in status["leases"]} == {"chromium"}
    bay.ok("close", session=s)

    # The user drops them: forgetting changes no profile either.
    assert bay.ok("hints", host, "--forget", session="user")["forgotten"] == 4
    assert bay.ok("hints", host, session="user")["hints"] == []
    assert _provider_of(bay, work["id"]) == ("chromium", 1)
