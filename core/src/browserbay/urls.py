"""The URL rule of every navigation, whatever road it comes by: ``bay open`` and ``bay tab
new`` in the keeper, trigger requests, the scoped CDP endpoint's URL-bearing methods
(:mod:`browserbay_cdp.policy`) and the tier-3 browser of ``bay window browser``. One rule, in
the core's public API, so a provider checks a URL exactly as the keeper does.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from browserbay.refusals import Refusal

ALLOWED_SCHEMES = ("http", "https")


_HOST_PORT = re.compile(r"^(localhost|[\w-]+(\.[\w-]+)+|\[[0-9a-fA-F:]+\]):\d+(/|$)")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")


def normalize_url(url: str) -> str:
    """``example.org`` → ``https://example.org``; ``localhost:8000`` → ``http://…``. Any
    scheme but http/https (and the exact ``about:blank``) is refused."""
    raw = url.strip()
    if raw == "about:blank":
        return raw
    scheme_match = _SCHEME.match(raw)
    if "://" not in raw and (scheme_match is None or _HOST_PORT.match(raw)):
        host = raw.split("/", 1)[0].rsplit(":", 1)[0]
        local = host in ("localhost", "127.0.0.1", "[::1]")
        raw = ("http://" if local else "https://") + raw
    check_scheme(raw, url)
    return raw


def check_scheme(url: str, given: str | None = None) -> None:
    """The scheme rule of every navigation, whatever road it comes by (``bay open``, the
    scoped CDP endpoint's URL-bearing methods): http, https and the exact ``about:blank``.
    The scheme is read as a browser reads it (leading blanks and controls stripped, tabs and
    newlines dropped anywhere, any case). ``given``: the URL as the caller wrote it."""
    if url == "about:blank":
        return
    scheme = urlsplit(url).scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        word = scheme or url.split(":", 1)[0]
        raise Refusal("local_scheme_refused", scheme=word[:40], url=url if given is None else given)
