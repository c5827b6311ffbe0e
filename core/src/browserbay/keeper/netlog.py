"""What a tab's page said and asked for, and a lease's routes and HAR recording.

Each tab keeps three bounded rings (:class:`TabLog`): its console messages
(:data:`CONSOLE_MAX`), its uncaught page errors (:data:`ERRORS_MAX`) and its requests
(:data:`REQUESTS_MAX`); a full ring drops its oldest entry and counts it. A lease keeps its
routes and its HAR recording (:class:`LeaseNet`), which last as long as its browser context:
``close`` (``Leases.end`` calls :meth:`LeaseNet.release`) removes them, and a context the lease
did not have when a route was made (a crash, a backend switch) has none of them.

Nothing kept here is a secret in plain text: a header whose name carries a credential
(``Authorization``, ``Proxy-Authorization``, ``Cookie``, ``Set-Cookie``, and every name
:func:`browserbay.scrub.credential_name` says carries one) is kept as ``••••``; no request or
response body is ever read or kept; every URL goes through :func:`browserbay.scrub.scrub_url`
and every text field through :func:`browserbay.scrub.scrub` and is clipped.

A route never answers for a host outside the lease's fence: such a request goes on
(``route.fallback``) to the fence, which refuses it as before — a mock cannot make a page of a
refused host, and ``bay open`` of one is still ``domain_refused`` before anything runs.

It sits below the sessions (browserbay.keeper.sessions holds a :class:`TabLog` per tab and a
:class:`LeaseNet` per lease) and imports none of the services.
"""

from __future__ import annotations

import contextlib
import fnmatch
import logging
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import parse_qsl, urlsplit

from browserbay._version import __version__
from browserbay.keeper.guard import host_allowed
from browserbay.refusals import clip
from browserbay.scrub import HIDDEN, credential_name, scrub, scrub_url

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, ConsoleMessage, Page, Request, Route
    from playwright.async_api import Error as PageError

log = logging.getLogger("browserbay.keeper")

#: Console messages a tab keeps (the newest).
CONSOLE_MAX = 500
#: Uncaught page errors a tab keeps.
ERRORS_MAX = 100
#: Requests a tab keeps.
REQUESTS_MAX = 500
#: Requests one HAR recording keeps (the first ones; the rest are counted).
HAR_MAX = 5000
#: Routes one lease may have at once.
ROUTES_MAX = 100
#: The largest body a route answers with (bytes).
BODY_MAX = 1024 * 1024
#: Characters kept of a console text or an error message, of a stack, of a URL, of a
#: header's value.
TEXT_MAX = 2000
STACK_MAX = 4000
URL_MAX = 2000
HEADER_MAX = 1000
#: Headers that carry credentials under names :func:`credential_name` does not catch.
MASKED = frozenset({"cookie", "set-cookie"})

T = TypeVar("T")


def text(value: str | None, limit: int = TEXT_MAX) -> str:
    """A page's text as kept: credentials of URLs in it blotted out, clipped."""
    return str(clip(scrub(value or ""), limit))


def url(value: str) -> str:
    return str(clip(scrub_url(value), URL_MAX))


def masked(name: str) -> bool:
    """The header ``name`` carries a credential: its value is never kept."""
    return name.lower() in MASKED or credential_name(name)


def mask_headers(headers: dict[str, str]) -> list[dict[str, str]]:
    """Headers as HAR lists them, each credential's value ``••••``, the others clipped."""
    return [
        {"name": k, "value": HIDDEN if masked(k) else text(v, HEADER_MAX)}
        for k, v in sorted(headers.items())
    ]


def now_iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))


class Ring(Generic[T]):
    """The newest ``bound`` entries, and how many older ones were dropped."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self._items: deque[T] = deque(maxlen=bound)
        self.dropped = 0

    def add(self, item: T) -> None:
        if len(self._items) == self.bound:
            self.dropped += 1
        self._items.append(item)

    def clear(self) -> None:
        self._items.clear()
        self.dropped = 0

    def __iter__(self) -> Iterator[T]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


@dataclass
class ConsoleEntry:
    type: str
    text: str
    location: str
    at: float

    def row(self) -> dict[str, Any]:
        return {"type": self.type, "text": self.text, "location": self.location, "at": self.at}

    def line(self) -> str:
        where = f"  ({self.location})" if self.location else ""
        return f"{clock(self.at)} [{self.type}] {self.text}{where}"


@dataclass
class ErrorEntry:
    name: str
    message: str
    stack: str
    url: str
    at: float

    def row(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "message": self.message,
            "stack": self.stack,
            "url": self.url,
            "at": self.at,
        }

    def line(self) -> str:
        head = f"{clock(self.at)} {self.name + ': ' if self.name else ''}{self.message}"
        return head + (f"\n{self.stack}" if self.stack else "")


@dataclass
class RequestEntry:
    """One request of a tab, as it went: its status (None until answered, or when it
    failed), its failure, whether a route answered it (``aborted``/``mocked``)."""

    n: int
    method: str
    url: str
    type: str
    at: float
    started: float = field(default_factory=time.monotonic)
    status: int | None = None
    status_text: str = ""
    mime: str = ""
    failure: str | None = None
    routed: str | None = None
    ms: float | None = None

    def row(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "method": self.method,
            "url": self.url,
            "status": self.status,
            "type": self.type,
            "ms": self.ms,
            "failure": self.failure,
            "routed": self.routed,
            "at": self.at,
        }

    def line(self) -> str:
        status = str(self.status) if self.status is not None else (self.failure or "…")
        took = f" {self.ms:.0f}ms" if self.ms is not None else ""
        routed = f" [{self.routed}]" if self.routed else ""
        return f"{self.method} {self.url} {status} {self.type}{took}{routed}"

    def matches(self, pattern: str) -> bool:
        """``pattern``: a glob when it has ``*``, ``?`` or ``[``, else a substring."""
        if any(c in pattern for c in "*?["):
            return fnmatch.fnmatchcase(self.url, pattern)
        return pattern in self.url


class TabLog:
    """One tab's console, errors and requests, each a bounded :class:`Ring`; fed by the
    page's events from :meth:`watch` on."""

    def __init__(self) -> None:
        self.console: Ring[ConsoleEntry] = Ring(CONSOLE_MAX)
        self.errors: Ring[ErrorEntry] = Ring(ERRORS_MAX)
        self.requests: Ring[RequestEntry] = Ring(REQUESTS_MAX)
        self._n = 0
        self._open: dict[Request, RequestEntry] = {}
        self._routed: dict[Request, str] = {}

    def watch(self, page: Page, net: LeaseNet) -> None:
        """Record the page's events here from now on; its finished requests also go to the
        lease's HAR while one records."""

        def on_console(msg: ConsoleMessage) -> None:
            loc = msg.location
            where = ""
            if loc.get("url"):
                where = f"{url(str(loc['url']))}:{loc.get('lineNumber', 0)}:"
                where += str(loc.get("columnNumber", 0))
            self.console.add(ConsoleEntry(msg.type, text(msg.text), where, time.time()))

        def on_error(err: PageError) -> None:
            page_url = ""
            with contextlib.suppress(Exception):
                page_url = url(page.url)
            name, stack = text(err.name, 200), text(err.stack, STACK_MAX)
            self.errors.add(ErrorEntry(name, text(err.message), stack, page_url, time.time()))

        async def on_done(request: Request) -> None:
            await self._done(request, None, net)

        async def on_failed(request: Request) -> None:
            await self._done(request, text(request.failure, 300) or "failed", net)

        page.on("console", on_console)
        page.on("pageerror", on_error)
        page.on("request", self._started)
        page.on("requestfinished", on_done)
        page.on("requestfailed", on_failed)

    def routed(self, request: Request, how: str) -> None:
        """A route answered ``request`` (``aborted``/``mocked``)."""
        entry = self._open.get(request)
        if entry is not None:
            entry.routed = how
        elif len(self._routed) < REQUESTS_MAX:
            self._routed[request] = how

    def _started(self, request: Request) -> None:
        self._n += 1
        entry = RequestEntry(
            self._n, request.method, url(request.url), request.resource_type, time.time()
        )
        entry.routed = self._routed.pop(request, None)
        self.requests.add(entry)
        self._open[request] = entry
        while len(self._open) > REQUESTS_MAX:  # never answered (a long poll): forgotten
            self._open.pop(next(iter(self._open)))

    async def _done(self, request: Request, failure: str | None, net: LeaseNet) -> None:
        entry = self._open.pop(request, None)
        if entry is None:
            return
        entry.ms = round((time.monotonic() - entry.started) * 1000, 1)
        entry.failure = failure
        item = net.begin(entry)  # in the HAR now, before any await: a stop keeps it
        try:
            response = await request.response()
            if response is not None:
                entry.status, entry.status_text = response.status, text(response.status_text, 100)
                entry.mime = text(response.headers.get("content-type", ""), 200)
            if item is not None:
                await net.fill(item, entry, request)
        except Exception as exc:  # the page went away meanwhile: what we have stays
            log.debug("netlog: request %s: %s", entry.n, exc)

    def clear_requests(self) -> None:
        self.requests.clear()
        self._open.clear()


@dataclass(frozen=True)
class Rule:
    """A route: requests matching ``glob`` fail (``abort``) or get this answer."""

    glob: str
    abort: bool
    status: int = 200
    body: bytes = b""
    content_type: str = ""

    def row(self) -> dict[str, Any]:
        if self.abort:
            return {"glob": self.glob, "abort": True}
        return {
            "glob": self.glob,
            "abort": False,
            "status": self.status,
            "content_type": self.content_type,
            "bytes": len(self.body),
        }

    def line(self) -> str:
        if self.abort:
            return f"{self.glob}  abort"
        return f"{self.glob}  {self.status} {self.content_type} ({len(self.body)} bytes)"


@dataclass
class Har:
    """A HAR recording: its entries (at most :data:`HAR_MAX`; the rest counted)."""

    since: float
    entries: list[dict[str, Any]] = field(default_factory=list)
    left_out: int = 0

    def document(self) -> dict[str, Any]:
        comment = f"browserbay: credentials masked ({HIDDEN}); no body recorded"
        if self.left_out:
            comment += f"; {self.left_out} request(s) past {HAR_MAX} left out"
        return {
            "log": {
                "version": "1.2",
                "creator": {"name": "browserbay", "version": __version__},
                "pages": [],
                "entries": self.entries,
                "comment": comment,
            }
        }


Owns = Callable[["Page | None"], bool]
"""Whether a page is the lease's; None: a new page's first request, made before its page
exists (a popup's navigation: Playwright routes it, but it has no frame yet)."""


class LeaseNet:
    """A lease's routes (on its browser context) and its HAR recording. Changed by the
    network verbs (browserbay.keeper.network) and released by ``Leases.end``."""

    def __init__(self) -> None:
        self._context: BrowserContext | None = None
        self._routes: dict[str, tuple[Rule, Callable[[Route], Any]]] = {}
        self.har: Har | None = None

    def routes(self, context: BrowserContext | None) -> list[Rule]:
        """The routes on ``context`` (routes made on another context — one a crash or a
        backend switch replaced — are gone with it)."""
        if context is not self._context:
            self._context, self._routes = context, {}
        return [rule for rule, _ in self._routes.values()]

    async def route(
        self,
        context: BrowserContext,
        rule: Rule,
        owns: Owns,
        fence: tuple[str, ...],
        mark: Callable[[Page, Request, str], None],
    ) -> bool:
        """Install ``rule`` on ``context`` for the pages ``owns`` says are the lease's (a
        route of the same glob is replaced). Answers whether one was replaced. Installed
        only once Playwright took it: a failure leaves the routes as they were."""
        if len(self.routes(context)) >= ROUTES_MAX and rule.glob not in self._routes:
            raise ValueError(f"at most {ROUTES_MAX} routes per session context")

        async def handle(route: Route) -> None:
            request = route.request
            page: Page | None = None
            opening = False  # a popup's first request: routed before its page exists
            try:
                page = request.frame.page
            except Exception:  # a service worker's request, or a page not made yet
                opening = request.is_navigation_request()
            host = urlsplit(request.url).hostname or ""
            ours = owns(page) if page is not None else opening and owns(None)
            if not ours or (fence and not host_allowed(host, fence)):
                await route.fallback()  # not ours, or outside the fence: the fence decides
                return
            try:
                if rule.abort:
                    if page is not None:
                        mark(page, request, "aborted")
                    await route.abort()
                else:
                    if page is not None:
                        mark(page, request, "mocked")
                    await route.fulfill(
                        status=rule.status, body=rule.body, content_type=rule.content_type
                    )
            except Exception as exc:  # the page went away meanwhile
                log.debug("netlog: route %s: %s", rule.glob, exc)

        old = self._routes.get(rule.glob)
        await context.route(rule.glob, handle)
        self._routes[rule.glob] = (rule, handle)
        if old is not None:
            with contextlib.suppress(Exception):
                await context.unroute(rule.glob, old[1])
        return old is not None

    async def unroute(self, context: BrowserContext, glob: str | None) -> list[Rule]:
        """Remove the route of ``glob`` (None: every route); answers those removed."""
        self.routes(context)
        globs = list(self._routes) if glob is None else [glob] if glob in self._routes else []
        removed = []
        for g in globs:
            rule, handler = self._routes.pop(g)
            removed.append(rule)
            with contextlib.suppress(Exception):
                await context.unroute(g, handler)
        return removed

    async def release(self) -> None:
        """The lease's context is ending (``close``, ``detach``): its routes go (a persistent
        profile's context stays for others, so they are taken off it), its HAR with them."""
        context, self._context = self._context, None
        routes, self._routes = self._routes, {}
        self.har = None
        if context is None:
            return
        for glob, (_rule, handler) in routes.items():
            with contextlib.suppress(Exception):
                await context.unroute(glob, handler)

    def har_start(self) -> Har | None:
        """Start recording; answers the recording already running, if one is (kept)."""
        if self.har is not None:
            return self.har
        self.har = Har(time.time())
        return None

    def har_stop(self) -> Har | None:
        har, self.har = self.har, None
        return har

    def begin(self, entry: RequestEntry) -> dict[str, Any] | None:
        """One finished request into the HAR, at once (its answer and headers are filled in
        by :meth:`fill`); None when no HAR records, or past :data:`HAR_MAX`."""
        har = self.har
        if har is None:
            return None
        if len(har.entries) >= HAR_MAX:
            har.left_out += 1
            return None
        query = [
            {"name": k, "value": v}
            for k, v in parse_qsl(urlsplit(entry.url).query, keep_blank_values=True)
        ]
        item: dict[str, Any] = {
            "startedDateTime": now_iso(entry.at),
            "time": entry.ms or 0,
            "request": {
                "method": entry.method,
                "url": entry.url,
                "httpVersion": "HTTP/1.1",
                "cookies": [],
                "headers": [],
                "queryString": query,
                "headersSize": -1,
                "bodySize": -1,
            },
            "response": {
                "status": 0,
                "statusText": "",
                "httpVersion": "HTTP/1.1",
                "cookies": [],
                "headers": [],
                "content": {"size": -1, "mimeType": ""},
                "redirectURL": "",
                "headersSize": -1,
                "bodySize": -1,
            },
            "cache": {},
            "timings": {"send": 0, "wait": entry.ms or 0, "receive": 0},
            "_resourceType": entry.type,
            "_failure": entry.failure,
            "_routed": entry.routed,
        }
        har.entries.append(item)
        return item

    async def fill(self, item: dict[str, Any], entry: RequestEntry, request: Request) -> None:
        """The request's answer and headers into its HAR entry (masked; no body)."""
        answer = item["response"]
        answer["status"], answer["statusText"] = entry.status or 0, entry.status_text
        answer["content"]["mimeType"] = entry.mime
        item["_routed"] = entry.routed
        item["request"]["headers"] = mask_headers(await request.all_headers())
        response = await request.response()
        if response is not None:
            answer["headers"] = mask_headers(await response.all_headers())
