"""The one scrubbing function (browserbay.scrub): remembered secret values, raw, URL-encoded
and JSON-escaped, and every URL's credentials (userinfo, credential-named parameters)."""

from __future__ import annotations

import json
import logging

from browserbay import protocol
from browserbay.keeper.daemon import Scrubbed
from browserbay.scrub import HIDDEN, remember, scrub, scrub_frame, scrub_url

SECRET = 'sk_scrub+me/"now"0123'


def test_credential_named_parameters_and_userinfo_are_blotted_out() -> None:
    for name in (
        "apiKey",
        "api_key",
        "token",
        "signingKey",
        "access_token",
        "X-Amz-Signature",
        "jwt",
        "password",
        "secret",
        "auth",
    ):
        url = f"wss://connect.example.com/s/1?{name}=v4lue1234&sessionId=abc"
        assert scrub_url(url) == f"wss://connect.example.com/s/1?{name}={HIDDEN}&sessionId=abc"
    assert scrub_url("https://ada:pw@example.com/x") == f"https://{HIDDEN}@example.com/x"
    assert (
        scrub_url("https://example.com/live#token=abc")
        == f"https://example.com/live#token={HIDDEN}"
    )
    plain = "https://example.com/shop.html?q=shoes&page=2"
    assert scrub(f"see {plain} now") == f"see {plain} now"  # nothing to hide: unchanged


def test_a_remembered_secret_is_gone_from_text_and_frames_in_every_encoding() -> None:
    remember(SECRET)
    remember("short")  # too short to be a key: never blotted out
    import urllib.parse

    for form in (SECRET, urllib.parse.quote(SECRET, safe=""), urllib.parse.quote_plus(SECRET)):
        assert SECRET not in scrub(f"said {form}.")
        assert HIDDEN in scrub(f"said {form}.")
    frame = scrub_frame(protocol.encode({"ok": False, "message": f"bad {SECRET}", "n": "short"}))
    assert SECRET.encode() not in frame
    assert json.dumps(SECRET)[1:-1].encode() not in frame
    assert json.loads(frame)["message"] == f"bad {HIDDEN}"
    assert json.loads(frame)["n"] == "short"


def test_the_keeper_log_filter_scrubs_messages_and_tracebacks() -> None:
    remember(SECRET)
    record = logging.LogRecord(
        "browserbay.cloud",
        logging.WARNING,
        __file__,
        1,
        "connect %s failed: %s",
        ("wss://v.example.com/?token=abcdefgh123", SECRET),
        None,
    )
    try:
        raise RuntimeError(f"https://v.example.com/?apiKey={SECRET}")
    except RuntimeError:
        import sys

        record.exc_info = sys.exc_info()
    assert Scrubbed().filter(record)
    line = logging.Formatter().format(record)
    assert SECRET not in line
    assert "abcdefgh123" not in line
    assert "token=" + HIDDEN in line


def test_the_remembered_secrets_are_bounded_and_the_most_recent_kept() -> None:
    from browserbay import scrub as module

    kept = "sk_kept_all_along_0123"
    remember(kept)
    for n in range(module.MAX_KNOWN * 3):
        remember(f"sk_flood_{n:06d}_abcdef")
        remember(kept)  # a key in use is resolved again and again
    assert len(module._known) == module.MAX_KNOWN
    assert HIDDEN in scrub(kept)
    assert "sk_flood_000000_abcdef" in scrub("sk_flood_000000_abcdef")  # long evicted
