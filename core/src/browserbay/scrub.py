"""The one scrubbing function for what leaves the keeper: :func:`scrub`.

Two things are blotted out (``••••``):

- **every exact secret value the keeper holds** — each secret field it resolved (a user's or
  the cluster's key, remembered at resolution: :func:`remember`) and the key store's
  passphrase — raw and URL-encoded, wherever it appears;
- **the credentials of every URL** in the text: its userinfo (``user:pass@``) and the value of
  each query or fragment parameter whose name says it carries one (``key``, ``token``,
  ``secret``, ``password``, ``auth``, ``sig``, ``jwt``, ``credential`` anywhere in the name,
  any case: ``apiKey``, ``api_key``, ``signingKey``, ``access_token``, ``X-Amz-Signature``).

Where it is applied: every answer frame the keeper sends (exact values only: a page's own URL
is the agent's to read), every line of the keeper log (both), every live link and every
vendor error (both; the cloud driver holds URLs back entirely). Standard library only.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse

HIDDEN = "••••"
#: A value shorter than this is never remembered: blotting out ``true`` everywhere helps
#: nobody, and no key is that short.
MIN_SECRET = 8

_CREDENTIAL_NAME = re.compile(r"key|token|secret|passw|pwd|auth|sig|jwt|credential", re.I)
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s\"'<>\\]+")
#: At most this many secrets are remembered, the most recently resolved kept: a key in use
#: is resolved again at every launch and listing, and an agent that stores value after value
#: cannot grow the keeper or slow every answer.
MAX_KNOWN = 64
_lock = threading.Lock()
_known: dict[str, None] = {}
_forms: tuple[str, ...] = ()


def remember(value: str) -> None:
    """Hold ``value`` as a secret: from now on :func:`scrub` blots it out (and its URL-encoded
    forms). Called for each secret value the keeper resolves, at resolution."""
    global _forms
    if len(value) < MIN_SECRET:
        return
    with _lock:
        if value in _known:
            _known[value] = _known.pop(value)  # the most recent again
            return
        _known[value] = None
        while len(_known) > MAX_KNOWN:
            del _known[next(iter(_known))]
        forms = set()
        for v in _known:
            forms.update({v, urllib.parse.quote(v, safe=""), urllib.parse.quote_plus(v, safe="")})
        _forms = tuple(sorted(forms, key=len, reverse=True))


def known() -> tuple[str, ...]:
    """Every form of every remembered secret, longest first."""
    return _forms


def scrub_values(text: str) -> str:
    """``text`` with every remembered secret (raw or URL-encoded) blotted out."""
    for form in _forms:
        if form in text:
            text = text.replace(form, HIDDEN)
    return text


def scrub_url(url: str) -> str:
    """One URL with its userinfo and every credential-named parameter's value blotted out."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return HIDDEN
    netloc = parts.netloc
    if "@" in netloc:
        netloc = HIDDEN + "@" + netloc.rsplit("@", 1)[1]
    return urllib.parse.urlunsplit(
        (parts.scheme, netloc, parts.path, _params(parts.query), _params(parts.fragment))
    )


def credential_name(name: str) -> bool:
    """``name`` (a URL parameter's, a header's) says its value carries a credential."""
    return _CREDENTIAL_NAME.search(name) is not None


def _params(text: str) -> str:
    if "=" not in text:
        return text
    out = []
    for pair in text.split("&"):
        name, eq, value = pair.partition("=")
        plain = urllib.parse.unquote_plus(name)
        out.append(f"{name}={HIDDEN}" if eq and value and credential_name(plain) else pair)
    return "&".join(out)


def scrub(text: str) -> str:
    """The one scrubbing function: remembered secrets, then every URL's credentials."""
    text = scrub_values(text)
    if "://" not in text:
        return text
    return _URL.sub(lambda m: scrub_url(m.group(0)), text)


def scrub_frame(data: bytes) -> bytes:
    """An encoded answer frame with every remembered secret blotted out (its JSON-escaped
    form too). Exact values only: URLs in an answer are the agent's own pages."""
    forms = _forms
    if not forms:
        return data
    for form in forms:
        for shape in {form, json.dumps(form, ensure_ascii=False)[1:-1]}:
            raw = shape.encode()
            if raw in data:
                data = data.replace(raw, HIDDEN.encode())
    return data
