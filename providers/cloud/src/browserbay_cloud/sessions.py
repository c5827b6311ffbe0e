"""A vendor's session API, driven by its :class:`~browserbay_cloud.vendors.Contract`: create a
session, find its CDP URL and live viewer, release it. One code path for every vendor; what
differs is data.

Secrets: the key goes only where the vendor's row says (a header, or the query of the CDP URL
for vendors that take it there). Every message that leaves this module is passed through
:meth:`VendorApi.scrub`, which blots the key and any CDP URL out of it.
"""

from __future__ import annotations

import json
import logging
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from browserbay.refusals import Refusal
from browserbay.scrub import remember, scrub
from browserbay_cloud.vendors import Call, Vendor

log = logging.getLogger("browserbay.cloud")

#: Seconds a REST call to a vendor may take (a create can start a browser: give it time).
API_TIMEOUT = 30.0
#: A 401/403 in an error text: a refused WebSocket handshake, as Playwright words it
#: ("WebSocket error: <url> 401 Unauthorized", "Unexpected status 401").
_STATUS = re.compile(
    r"(?:\bstatus\b|\bHTTP\b)[ :/]*(40[13])\b|\b(40[13]) (?:Unauthorized|Forbidden)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Created:
    """A session the vendor created for us. ``cdp_url`` may carry a credential: never log it."""

    session_id: str | None
    cdp_url: str
    view_url: str | None


class VendorApi:
    """One vendor's API, with one key's fields resolved."""

    def __init__(self, vendor: Vendor, fields: Mapping[str, str]):
        self.vendor = vendor
        self.fields = dict(fields)
        self.base = self.fields.get(vendor.url_field, vendor.api_url).rstrip("/")
        self.headers = {k: v.format(**self._templates()) for k, v in vendor.headers.items()}
        self.query = {k: v.format(**self._templates()) for k, v in vendor.query.items()}
        self._secrets: set[str] = {v for k, v in self.fields.items() if self._is_secret(k)}

    def _templates(self) -> dict[str, str]:
        return {f.name: self.fields.get(f.name, "") for f in self.vendor.row().fields}

    def _is_secret(self, name: str) -> bool:
        return any(f.name == name and f.secret for f in self.vendor.row().fields)

    # -- what may be said ---------------------------------------------------------------------

    def scrub(self, text: str) -> str:
        """``text`` through :func:`browserbay.scrub.scrub` (this key's value and every URL's
        credentials blotted out), then every URL held back entirely: a vendor's CDP URL may
        carry a signed token under any name."""
        for secret in self._secrets:
            remember(secret)
        text = scrub(text)
        return re.sub(r"\b(wss?|https?)://\S+", r"\1://<a URL held back>", text)

    def _fail(self, what: str, exc: BaseException | None, status: int | None = None) -> Refusal:
        """The refusal for a failed step: 401/403 from the vendor is its verdict on the key."""
        text = "" if exc is None else (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if status is None and exc is not None:
            found = _STATUS.search(str(exc))
            status = int(found.group(1) or found.group(2)) if found else None
        if status in (401, 403):
            return Refusal(
                "backend_key_invalid",
                way_out=f"bay keys set {self.vendor.id} api_key   (a valid key; then bay keys "
                f"test {self.vendor.id})",
                provider=self.vendor.id,
                integration=self.vendor.id,
                field="api_key",
                reason=f"{self.vendor.title} answered HTTP {status} to {what}",
                status=status,
            )
        detail = self.scrub(text)[:300].translate(str.maketrans("{}", "()")) or "no detail"
        return Refusal(
            "backend_unavailable",
            provider=self.vendor.id,
            reason=f"{what} failed: {detail}",
            fix=f"bay keys test {self.vendor.id}   (checks the key and the host: "
            f"{urllib.parse.urlsplit(self.base).netloc})",
        )

    def connect_failed(self, exc: BaseException) -> Refusal:
        """The refusal for a CDP connection that failed (a 401/403 handshake is the
        vendor's verdict on the key); the URL and the key are never in it."""
        return self._fail("connecting over CDP", exc)

    # -- the calls ----------------------------------------------------------------------------

    def _body(self, call: Call) -> dict[str, Any] | None:
        if call.body is None:
            return None
        body: dict[str, Any] = {}
        for key, template in call.body.items():
            names = re.findall(r"\{(\w+)\}", template)
            if any(not self.fields.get(n) for n in names):
                continue  # an optional field with no value: the vendor's default
            value = template.format(**self._templates())
            body[key] = {"true": True, "false": False}.get(value, value)
        return body

    async def _request(self, client: httpx.AsyncClient, call: Call, session_id: str | None) -> Any:
        path = call.path.format(session_id=urllib.parse.quote(session_id or "", safe=""))
        what = f"{call.method} {call.path}"
        body = self._body(call)
        try:
            answer = await client.request(
                call.method,
                self.base + path,
                headers=self.headers,
                params=self.query,
                content=None if body is None else json.dumps(body),
            )
        except httpx.HTTPError as exc:
            raise self._fail(what, exc) from None
        if answer.status_code >= 400:
            reason = f"HTTP {answer.status_code}: {_vendor_words(answer)}"
            raise self._fail(what, RuntimeError(reason), answer.status_code)
        if not answer.content:
            return {}
        try:
            return answer.json()
        except ValueError:
            return {}

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            timeout=API_TIMEOUT,
            follow_redirects=False,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )

    async def create(self) -> Created:
        """Create a session (or, for a vendor without a create call, name the URL that
        starts one). Refuses ``backend_key_invalid`` on the vendor's 401/403."""
        contract = self.vendor.contract
        if contract.create is None:
            return Created(None, self.connect_url(self._ws_base()), None)
        async with self._client() as client:
            answer = await self._request(client, contract.create, None)
            session_id = _field(answer, contract.id_field)
            cdp = _field(answer, contract.cdp_field)
            if cdp is None:
                if session_id is not None:
                    await self._release_with(client, session_id)
                raise self._fail(
                    f"{contract.create.method} {contract.create.path}",
                    RuntimeError(f"the answer has no {contract.cdp_field!r} field"),
                )
            view = _field(answer, contract.view_field) if contract.view_field else None
            if view is None and contract.view is not None and session_id is not None:
                try:
                    more = await self._request(client, contract.view, session_id)
                    view = _field(more, contract.view_answer_field or "")
                except Refusal as refusal:  # no viewer is not a reason to give up the browser
                    log.warning("%s: no live viewer (%s)", self.vendor.id, refusal.message)
        return Created(session_id, self.connect_url(cdp), view)

    async def release(self, created: Created) -> bool:
        """End the session the documented way. True when a release call was made and
        answered; False when the contract has none (closing the connection ended it)."""
        if self.vendor.contract.release is None or created.session_id is None:
            return False
        async with self._client() as client:
            await self._release_with(client, created.session_id)
        return True

    async def _release_with(self, client: httpx.AsyncClient, session_id: str) -> None:
        call = self.vendor.contract.release
        if call is not None:
            await self._request(client, call, session_id)

    # -- URLs ---------------------------------------------------------------------------------

    def _ws_base(self) -> str:
        parts = urllib.parse.urlsplit(self.base)
        scheme = {"https": "wss", "http": "ws"}.get(parts.scheme, parts.scheme)
        return urllib.parse.urlunsplit((scheme, parts.netloc, parts.path or "/", "", ""))

    def connect_url(self, cdp: str) -> str:
        """The CDP URL with the query the vendor wants on it (its key, for some)."""
        wanted = self.vendor.contract.connect_query
        extra = {k: v.format(**self._templates()) for k, v in wanted.items()}
        if not extra:
            return cdp
        parts = urllib.parse.urlsplit(cdp)
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        query += list(extra.items())
        return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


def _field(answer: Any, name: str) -> str | None:
    """A string field of a JSON answer (``a.b`` reaches into objects)."""
    value = answer
    for part in name.split(".") if name else ():
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value if isinstance(value, str) and value else None


def _vendor_words(answer: httpx.Response) -> str:
    """What the vendor said in an error answer: its JSON ``error``/``message``/``detail`` when
    it has one, else the text; short, one line, without braces (a refusal message is filled
    from templates and must not look like one)."""
    text = answer.text
    try:
        body = answer.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        for key in ("error", "message", "detail"):
            value = body.get(key)
            if isinstance(value, dict):
                value = value.get("message")
            if isinstance(value, str) and value.strip():
                text = value
                break
    words = " ".join(text.split())[:200]
    return words.translate(str.maketrans("{}", "()")) or "no detail"
