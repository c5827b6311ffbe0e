"""Key tests: what ``bay keys test <id>`` runs, chosen by the integration row's test kind.

- ``shape-only``: no network at all; the required fields are there and every value matches
  its field's pattern.
- ``credential-exchange``: the shape check, then ONE bounded read-only ``GET`` carrying the
  key to the host derived from the row's own fields (:func:`derive_target`: the value of
  ``exchange.url_field``, the user's or its documented default) — and to no other: redirects
  are not followed and no proxy is used.
- ``reachability``: ONE ``GET`` to that host without the key.

A runner that cannot derive its host refuses ``key_test_no_host`` by name; it never falls
back to a host written somewhere else. A verdict's detail never quotes the vendor's answer
(which could echo the key): only the status and what it means.
"""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from browserbay.keys import Resolution, check_pins
from browserbay.model import IntegrationRow, KeyVerdict
from browserbay.refusals import Refusal

TIMEOUT = 5.0
MAX_BODY = 64 * 1024
LOOPBACK = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True)
class Target:
    """Where a network test goes: the base URL, its host (``host[:port]``) and the field
    it came from."""

    url: str
    host: str
    field: str


def derive_target(row: IntegrationRow, res: Resolution) -> Target:
    """The one host a network test of ``row`` may reach, from the row's own field."""
    ex = row.exchange
    field = ex.url_field if ex is not None else "(none)"
    example = "https://api.example.com"
    if ex is None:
        raise Refusal(
            "key_test_no_host",
            integration=row.id,
            field=field,
            example=example,
            reason="its row declares no exchange (which field names the vendor's URL)",
        )
    value = res.values.get(ex.url_field)
    if value is None:
        raise Refusal(
            "key_test_no_host",
            integration=row.id,
            field=field,
            example=example,
            reason=f"{field} has no value and no default",
        )
    url = value.reveal().strip()
    parts = urllib.parse.urlsplit(url)
    problem = None
    if parts.scheme not in ("https", "http") or not parts.hostname:
        problem = f"{field} is not an http(s) URL with a host"
    elif parts.username or parts.password:
        problem = f"{field} carries credentials in the URL; set them as their own fields"
    elif parts.query or parts.fragment:
        problem = f"{field} has a query or fragment; give the base URL only"
    elif parts.scheme == "http" and parts.hostname not in LOOPBACK:
        problem = f"{field} is plain http to another machine; use https"
    if problem is not None:
        raise Refusal(
            "key_test_no_host", integration=row.id, field=field, example=example, reason=problem
        )
    return Target(url.rstrip("/"), parts.netloc, field)


TargetOf = Callable[[IntegrationRow, Resolution], Target]


def run_test(
    row: IntegrationRow,
    res: Resolution,
    *,
    target_of: TargetOf = derive_target,
    timeout: float = TIMEOUT,
) -> KeyVerdict:
    """Run ``row``'s key test on resolved values. Blocking (at most one request of at most
    ``timeout`` seconds): the keeper runs it in a worker thread."""
    kind = row.test_kind
    shape = _shape(row, res)
    if shape is not None:
        detail, fix = shape
        return KeyVerdict(row.id, kind, False, detail, None, time.time(), fix)
    if kind == "shape-only":
        return KeyVerdict(
            row.id, kind, True, "the format is right (no network used)", None, time.time()
        )
    target = target_of(row, res)
    if kind == "credential-exchange":
        check_pins(row, res)  # the key goes only to the host it was stored for
    assert row.exchange is not None  # derive_target refused otherwise
    url = target.url + row.exchange.path
    headers: dict[str, str] = {}
    if kind == "credential-exchange":
        values = {name: v.reveal() for name, v in res.values.items()}
        try:
            headers = {k: t.format_map(values) for k, t in row.exchange.headers.items()}
            query = {k: t.format_map(values) for k, t in row.exchange.query.items()}
        except KeyError as exc:
            return KeyVerdict(
                row.id,
                kind,
                False,
                f"{exc.args[0]} is not set",
                target.host,
                time.time(),
                f"bay keys set {row.id} {exc.args[0]}",
            )
        if query:
            url += "?" + urllib.parse.urlencode(query)
    fix_url = f"check {target.field} (bay keys set {row.id} {target.field}) and the network"
    try:
        status = one_request(url, headers, timeout)
    except TimeoutError:
        return KeyVerdict(
            row.id,
            kind,
            False,
            f"{target.host} did not answer within {timeout:g}s",
            target.host,
            time.time(),
            fix_url,
        )
    except urllib.error.URLError as exc:
        reason = str(exc.reason)[:200]
        return KeyVerdict(
            row.id,
            kind,
            False,
            f"cannot reach {target.host}: {reason}",
            target.host,
            time.time(),
            fix_url,
        )
    return _judge(row, kind, status, target)


def _shape(row: IntegrationRow, res: Resolution) -> tuple[str, str] | None:
    if res.problems:
        return "; ".join(res.problems), "bay keys list   (shows each store and its problem)"
    if res.missing:
        field = res.missing[0]
        return f"{field} is not set", f"bay keys set {row.id} {field}"
    for f in row.fields:
        value = res.values.get(f.name)
        if value is not None and f.pattern and re.fullmatch(f.pattern, value.reveal()) is None:
            return (
                f"{f.name} does not have the expected shape",
                f"bay keys set {row.id} {f.name}   ({f.help or f.pattern})",
            )
    return None


def _judge(row: IntegrationRow, kind: str, status: int, target: Target) -> KeyVerdict:
    now = time.time()
    secret = next((f.name for f in row.fields if f.secret), "")
    if kind == "reachability":
        ok = status < 500
        detail = f"{target.host} answered HTTP {status}"
        return KeyVerdict(row.id, kind, ok, detail, target.host, now, "" if ok else "try later")
    if 200 <= status < 300:
        return KeyVerdict(
            row.id, kind, True, f"{target.host} accepted the key (HTTP {status})", target.host, now
        )
    if 300 <= status < 400:
        detail = f"{target.host} redirected (HTTP {status}); a key test follows no redirect"
        fix = f"set the final URL: bay keys set {row.id} {target.field}"
    elif status in (401, 403):
        detail = f"{target.host} refused the key (HTTP {status})"
        fix = f"bay keys set {row.id} {secret}   (a current key from the vendor's console)"
    else:
        detail = f"{target.host} answered HTTP {status}"
        fix = f"check {target.field} (bay keys set {row.id} {target.field}), or try later"
    return KeyVerdict(row.id, kind, False, detail, target.host, now, fix)


def one_request(url: str, headers: Mapping[str, str], timeout: float) -> int:
    """One GET, no proxy, no redirect, at most ``MAX_BODY`` bytes read: the status."""
    # Imported at a key test's first request, not with the plugins at the keeper's start:
    # urllib.request and http.client are ~20 modules a cold open does not use.
    import urllib.request

    class NoRedirects(urllib.request.HTTPRedirectHandler):
        """A redirect would be a second request, perhaps to another host: not followed."""

        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirects())
    request = urllib.request.Request(  # noqa: S310 - the scheme is checked by derive_target
        url,
        headers={"User-Agent": "browserbay-keytest", "Accept": "application/json", **headers},
        method="GET",
    )
    try:
        with opener.open(request, timeout=timeout) as response:
            response.read(MAX_BODY)
            return int(response.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return int(exc.code)
