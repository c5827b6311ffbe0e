"""The console, errors and network verbs: what the current tab's page logged, threw and
requested (its :class:`~browserbay.keeper.netlog.TabLog`), and the lease's routes and HAR
(its :class:`~browserbay.keeper.netlog.LeaseNet`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio

from browserbay.keeper import netlog
from browserbay.keeper.act import Act
from browserbay.keeper.netlog import Ring, Rule
from browserbay.keeper.pageverbs import Answer, page_verb
from browserbay.refusals import Refusal

if TYPE_CHECKING:
    from playwright.async_api import Page, Request

    from browserbay.keeper.sessions import Lease

#: The options each ``network`` action takes (any other given is a usage refusal).
_OPTIONS = {
    "requests": {"filter", "clear"},
    "route": {"arg", "abort", "body", "body_file", "status", "content_type"},
    "unroute": {"arg"},
    "har": {"arg", "file"},
}


def _dropped(ring: Ring[Any], what: str) -> str:
    if not ring.dropped:
        return ""
    return f"\n({ring.dropped} older {what} dropped: the log keeps the newest {ring.bound})"


def _listing(act: Act, ring: Ring[Any], rows: list[Any], what: str, key: str) -> Answer:
    data = {
        key: [r.row() for r in rows],
        "tab": act.tab.id,
        "dropped": ring.dropped,
        "bound": ring.bound,
        "cleared": bool(act.args.get("clear")),
    }
    text = "\n".join(r.line() for r in rows) or f"no {what} on tab {act.tab.id}"
    text += _dropped(ring, what)
    if act.args.get("clear"):
        ring.clear()
        text += "\n(cleared)"
    return data, text


@page_verb("console")
async def verb_console(act: Act) -> Answer:
    ring = act.tab.log.console
    return _listing(act, ring, list(ring), "console messages", "messages")


@page_verb("errors")
async def verb_errors(act: Act) -> Answer:
    ring = act.tab.log.errors
    return _listing(act, ring, list(ring), "page errors", "errors")


@page_verb("network")
async def verb_network(act: Act) -> Answer:
    action = str(act.args["action"])
    extra = sorted(
        k
        for k in ("arg", "filter", "clear", "abort", "body", "status", "content_type")
        if act.args.get(k) not in (None, False, "") and k not in _OPTIONS[action]
    )
    if extra:
        named = ", ".join(
            "the glob" if k == "arg" else "file" if k == "file" else "--" + k.replace("_", "-")
            for k in extra
        )
        raise Refusal("usage", detail=f"network {action} takes no {named}", verb="network")
    if action == "requests":
        return _requests(act)
    if action == "route":
        return await _route(act)
    if action == "unroute":
        return await _unroute(act)
    return await _har(act)


def _requests(act: Act) -> Answer:
    log = act.tab.log
    pattern = act.args.get("filter")
    rows = [r for r in log.requests if not pattern or r.matches(str(pattern))]
    answer = _listing(act, log.requests, rows, "requests", "requests")
    if act.args.get("clear"):
        log.clear_requests()
    return answer


def _owns(lease: Lease) -> netlog.Owns:
    """The lease's pages: in an ephemeral context every page is its lease's (a popup before
    it is adopted too, its first request included); in a persistent profile's, shared with
    other sessions, only its tabs — and a new page's first request (a popup not made yet,
    whose opener no request names) only while no other session holds that browser: it could
    be theirs, and a route never answers another session's page."""
    if lease.profile.ephemeral:
        return lambda _page: True

    def owns(page: Page | None) -> bool:
        if page is None:
            running = lease.browser
            return running is not None and running.users <= {lease.session.id}
        return any(t.page is page for t in lease.tabs.values())

    return owns


def _marker(lease: Lease) -> Any:
    def mark(page: Page, request: Request, how: str) -> None:
        for tab in lease.tabs.values():
            if tab.page is page:
                tab.log.routed(request, how)
                return

    return mark


async def _body(act: Act) -> tuple[bytes, str] | None:
    """The route's body and the name it came under (``--body``, or the file the client sent
    for ``--body-file``), or None for neither; too_large past :data:`netlog.BODY_MAX`."""
    given, handle = act.args.get("body"), act.args.get("body_file")
    if given is not None and handle:
        raise Refusal(
            "usage", detail="network route takes --body or --body-file, not both", verb="network"
        )
    if handle:
        got = act.files.take(handle, "body_file")
        size, name = got.size, got.name
        body = (
            b"" if size > netlog.BODY_MAX else await anyio.to_thread.run_sync(got.path.read_bytes)
        )
    elif given is not None:
        body, name = str(given).encode(), ""
        size = len(body)
    else:
        return None
    if size > netlog.BODY_MAX:
        raise Refusal(
            "too_large",
            what="the route's body",
            size=size,
            limit=netlog.BODY_MAX,
            fix="answer with a smaller body (a route is for a mock, not a download)",
        )
    return body, name


def _content_type(body: bytes, name: str) -> str:
    """What a body is, when the route does not say: JSON when it parses as JSON, else what
    its file name says, else text."""
    try:
        json.loads(body)
        return "application/json"
    except ValueError:
        pass
    import mimetypes  # at the first fulfilled body with a name, not at the keeper's start

    guessed = mimetypes.guess_type(name)[0] if name else None
    return guessed or "text/plain; charset=utf-8"


async def _rule(act: Act, glob: str) -> Rule:
    """The route the arguments ask for, or the refusal that says what is wrong."""
    abort, body = bool(act.args.get("abort")), await _body(act)
    status, content_type = act.args.get("status"), act.args.get("content_type")

    def usage(detail: str) -> Refusal:
        return Refusal("usage", detail=detail, verb="network")

    if abort == (body is not None):
        raise usage("network route needs exactly one of --abort or --body (or --body-file)")
    if body is None:
        if status is not None or content_type:
            raise usage("network route --abort takes no --status or --content-type")
        return Rule(glob, True)
    code = 200 if status is None else int(status)
    if not 200 <= code <= 599:
        raise usage(f"network route --status must be from 200 to 599, not {code}")
    data, name = body
    return Rule(glob, False, code, data, str(content_type or _content_type(data, name)))


async def _route(act: Act) -> Answer:
    lease, context = act.lease, act.lease.context
    assert context is not None  # a page verb runs on a started lease
    glob = act.args.get("arg")
    if not glob:
        if any(act.args.get(k) not in (None, False, "") for k in _OPTIONS["route"]):
            raise Refusal("usage", detail="network route needs a URL glob", verb="network")
        rules = lease.net.routes(context)
        text = "\n".join(r.line() for r in rules) or "no routes (bay network route <glob> ...)"
        return {"routes": [r.row() for r in rules]}, text
    rule = await _rule(act, str(glob))
    try:
        replaced = await lease.net.route(
            context, rule, _owns(lease), lease.allowed_domains, _marker(lease)
        )
    except ValueError as exc:
        raise Refusal("usage", detail=str(exc), verb="network") from None
    rules = lease.net.routes(context)
    verb = "replaced the route" if replaced else "routed"
    data = {"route": rule.row(), "replaced": replaced, "routes": [r.row() for r in rules]}
    return data, f"{verb} {rule.line()}"


async def _unroute(act: Act) -> Answer:
    lease, context = act.lease, act.lease.context
    assert context is not None
    glob = act.args.get("arg")
    have = lease.net.routes(context)
    if glob and all(r.glob != glob for r in have):
        raise Refusal(
            "route_unknown",
            glob=str(glob),
            routes=", ".join(r.glob for r in have) or "none",
        )
    removed = await lease.net.unroute(context, str(glob) if glob else None)
    left = lease.net.routes(context)
    data = {"removed": [r.row() for r in removed], "routes": [r.row() for r in left]}
    if not removed:
        return data, "no routes to remove"
    return data, "removed " + ", ".join(r.glob for r in removed)


async def _har(act: Act) -> Answer:
    net = act.lease.net
    what = act.args.get("arg")
    if what not in ("start", "stop"):
        raise Refusal("usage", detail="network har needs start or stop", verb="network")
    if what == "start":
        if act.args.get("file"):
            raise Refusal("usage", detail="network har start takes no file", verb="network")
        running = net.har_start()
        if running is not None:
            n = len(running.entries)
            since = netlog.clock(running.since)
            return (
                {"recording": True, "since": running.since, "entries": n, "started": False},
                f"already recording a HAR since {since} ({n} requests so far): "
                "bay network har stop",
            )
        assert net.har is not None
        started = {"recording": True, "since": net.har.since, "entries": 0, "started": True}
        return started, "recording a HAR of your requests: bay network har stop"
    har = net.har_stop()
    if har is None:
        raise Refusal("har_not_recording")
    doc = har.document()
    n = len(har.entries)
    data: dict[str, Any] = {"entries": n, "left_out": har.left_out}
    given = act.args.get("file")
    if not given:
        return {"har": doc, **data}, json.dumps(doc, ensure_ascii=False, indent=1)
    raw = json.dumps(doc, ensure_ascii=False, indent=1).encode()
    offer = await act.files.offer_bytes(raw, "session.har")
    return {"file": offer.row(), "path": str(given), "bytes": len(raw), **data}, (
        f"HAR of {n} request(s): {given}"
    )
