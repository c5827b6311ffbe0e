"""The session's browser state: ``cookies``, ``storage`` and ``state`` (Playwright's storage
state: cookies and each origin's localStorage), and the seed of ``new --from-session``.

Everything here acts on the lease's own browser context: a session's ephemeral browser is its
own; a persistent profile's context is every session's that uses it (its cookies are theirs
too, as the manual says). Values are the session's secrets: answers clip them
(:data:`CLIP`), the audit and the hooks see a value argument as its length only (the rows'
``secret_args``), and nothing here logs one.

The fence holds here too: a cookie set for a host outside the lease's allowed domains, or a
state whose cookies or origins are outside them, is refused ``domain_refused`` before
anything is applied. A state that is not Playwright storage state is refused ``usage``,
naming what is wrong, and nothing of it is applied.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

import anyio

from browserbay.keeper.act import Act
from browserbay.keeper.browsers import BrowserPool
from browserbay.keeper.guard import host_allowed
from browserbay.keeper.leases import check_url_allowed
from browserbay.keeper.pageverbs import Answer, page_verb
from browserbay.keeper.sessions import Lease, Session
from browserbay.refusals import Refusal
from browserbay.registry import ProfileRow

if TYPE_CHECKING:
    from playwright._impl._api_structures import SetCookieParam
    from playwright.async_api import BrowserContext
    from playwright.async_api import StorageState as PlaywrightState

#: Characters of a cookie's or a storage item's value an answer shows (then ``…``).
CLIP = 40
#: The most bytes a state may weigh (what one argument of a frame carries).
MAX_STATE = 1024 * 1024
SAME_SITE = ("Strict", "Lax", "None")
#: The most storage items one listing shows.
MAX_ITEMS = 200
#: The most cookies one listing shows (Chromium keeps up to 180 a host; a page on many hosts
#: of one site, or a long-lived profile, holds thousands).
MAX_COOKIES = 100


def clip(value: str) -> str:
    return value if len(value) <= CLIP else value[:CLIP] + "…"


def fence_of(lease: Lease) -> tuple[str, ...]:
    """The allowed domains the lease's browser holds to (its own, or its profile's)."""
    if lease.allowed_domains:
        return lease.allowed_domains
    return lease.browser.fence if lease.browser is not None else ()


def check_host(host: str, fence: tuple[str, ...]) -> None:
    """``domain_refused`` for a host (or a cookie's domain) outside the fence."""
    host = host.lower().lstrip(".")
    if fence and not host_allowed(host, fence):
        raise Refusal("domain_refused", host=host, allowed=", ".join(fence))


def _context(act: Act) -> BrowserContext:
    context = act.lease.context
    assert context is not None  # the page verb's tab is in it
    return context


def _usage(verb: str, detail: str) -> Refusal:
    return Refusal("usage", detail=detail, verb=verb)


def _failed(verb: str, exc: BaseException) -> Refusal:
    """``action_failed`` with the first line of what the browser said."""
    text = str(exc).strip()
    return Refusal(
        "action_failed", verb=verb, reason=text.splitlines()[0] if text else type(exc).__name__
    )


# -- cookies ----------------------------------------------------------------------------


def _cookie_row(c: Any) -> dict[str, Any]:
    """A cookie for an answer. A page chooses its cookies' names and paths as well as their
    values (a 4 KB name is a valid cookie): each is clipped, with its length."""
    value, name, path = (str(c.get(k) or "") for k in ("value", "name", "path"))
    expires = c.get("expires", -1)
    return {
        "name": clip(name),
        "name_chars": len(name),
        "value": clip(value),
        "value_chars": len(value),
        "domain": clip(str(c.get("domain") or "")),
        "path": clip(path),
        "path_chars": len(path),
        "expires": expires if expires is not None and expires >= 0 else None,
        "http_only": bool(c.get("httpOnly")),
        "secure": bool(c.get("secure")),
        "same_site": c.get("sameSite"),
    }


def _cookie_line(row: dict[str, Any]) -> str:
    flags = [f for f, on in (("httpOnly", row["http_only"]), ("secure", row["secure"])) if on]
    expires = (
        "session"
        if row["expires"] is None
        else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row["expires"]))
    )
    return (
        f"{row['name']}={row['value']}  {row['domain']}{row['path']}  expires {expires}  "
        f"SameSite={row['same_site']}" + (f"  {' '.join(flags)}" if flags else "")
    )


def _matches(c: Any, name: str | None, domain: str | None) -> bool:
    if name is not None and c.get("name") != name:
        return False
    return domain is None or str(c.get("domain", "")).lstrip(".") == domain.lstrip(".")


@page_verb("cookies")
async def verb_cookies(act: Act) -> Answer:
    action = str(act.args.get("action") or "get")
    context = _context(act)
    name, domain = act.args.get("name"), act.args.get("domain")
    if action == "set":
        return await _set_cookie(act, context)
    given: list[str] = [
        k for k in ("cookie", "value", "url", "path", "same_site", "expires") if k in act.args
    ]
    given += [k for k in ("http_only", "secure") if act.args.get(k)]
    if given:
        raise _usage("cookies", f"cookies {action} takes no {', '.join(given)} (those are for set)")
    every = await context.cookies()
    mine = [c for c in every if _matches(c, name, domain)]
    if action == "clear":
        await context.clear_cookies(name=name, domain=domain)
        left = [c for c in await context.cookies() if _matches(c, name, domain)]
        if left:
            raise Refusal(
                "action_failed", verb="cookies", reason=f"{len(left)} cookie(s) are still there"
            )
        return {"cleared": len(mine), "url": act.page.url}, f"cleared {len(mine)} cookie(s)"
    # A page chooses how many cookies it sets: at most MAX_COOKIES listed, as storage's
    # items (the count says how many there are; a filter narrows the listing).
    rows = [_cookie_row(c) for c in mine[:MAX_COOKIES]]
    text = "\n".join(_cookie_line(r) for r in rows) or "(no cookies)"
    if len(mine) > MAX_COOKIES:
        hidden = len(mine) - MAX_COOKIES
        text += f"\n… {hidden} more (bay cookies --name <name> or --domain <domain>)"
    return {"cookies": rows, "count": len(mine), "url": act.page.url}, text


async def _set_cookie(act: Act, context: BrowserContext) -> Answer:
    a = act.args
    name, value = a.get("cookie"), a.get("value")
    if not name or value is None:
        raise _usage("cookies", "cookies set needs <name> <value>")
    if a.get("name") is not None:
        raise _usage("cookies", "cookies set takes the name as a word: cookies set <name> <value>")
    url, domain, path = a.get("url"), a.get("domain"), a.get("path")
    if url and domain:
        raise _usage("cookies", "cookies set takes --url or --domain, not both")
    if url is None and domain is None:
        here = act.page.url
        if urlsplit(here).scheme not in ("http", "https"):
            raise _usage(
                "cookies",
                f"cookies set needs --url or --domain (the current page, {here}, has no host)",
            )
        url = here
    fence = fence_of(act.lease)
    cookie: dict[str, Any] = {"name": str(name), "value": str(value)}
    if url is not None:
        if path is not None:
            raise _usage("cookies", "--path goes with --domain (a --url names its own path)")
        parts = urlsplit(str(url))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise _usage("cookies", f"--url must be an http(s) URL with a host, not {url!r}")
        check_url_allowed(str(url), fence)
        cookie["url"] = str(url)
    else:
        host = str(domain).strip()
        if not host or "/" in host or ":" in host or " " in host:
            raise _usage("cookies", f"--domain must be a host name (.example.org), not {domain!r}")
        check_host(host, fence)
        cookie["domain"] = host
        cookie["path"] = str(path or "/")
    expires = a.get("expires")
    if expires is not None:
        if not math.isfinite(float(expires)) or float(expires) <= time.time():
            raise _usage("cookies", "--expires is a time to come, in epoch seconds")
        cookie["expires"] = float(expires)
    same_site = a.get("same_site")
    if same_site is not None:
        if same_site not in SAME_SITE:  # pragma: no cover - the row's choices hold it
            raise _usage("cookies", "--same-site is Strict, Lax or None")
        if same_site == "None" and not a.get("secure"):
            raise _usage("cookies", "--same-site None needs --secure (browsers refuse it else)")
        cookie["sameSite"] = same_site
    cookie["httpOnly"] = bool(a.get("http_only"))
    cookie["secure"] = bool(a.get("secure"))
    try:
        await context.add_cookies([cast("SetCookieParam", cookie)])
    except Exception as exc:
        raise _failed("cookies", exc) from None
    urls = [str(url)] if url is not None else []
    kept = [
        c
        for c in await context.cookies(urls)
        if c.get("name") == name and (url is not None or _matches(c, None, cookie["domain"]))
    ]
    if not kept:  # no "done" on a cookie the browser did not keep
        why = (
            " (a secure cookie needs an https URL)"
            if a.get("secure") and url and str(url).startswith("http:")
            else ""
        )
        raise Refusal(
            "action_failed", verb="cookies", reason=f"the browser did not keep the cookie{why}"
        )
    row = _cookie_row(kept[0])
    return {"cookie": row, "url": act.page.url}, "set " + _cookie_line(row)


# -- storage ----------------------------------------------------------------------------

_STORAGE_JS = """([area, action, key, value]) => {
  let s;
  try { s = area === 'local' ? window.localStorage : window.sessionStorage; }
  catch (e) { return {error: String(e && e.message || e)}; }
  if (!s) return {error: 'this page has no ' + area + 'Storage'};
  if (action === 'set') { s.setItem(key, value); return {value: s.getItem(key)}; }
  if (action === 'clear') { const n = s.length; s.clear(); return {cleared: n, left: s.length}; }
  if (key !== null) return {value: s.getItem(key)};
  const items = [];
  for (let i = 0; i < s.length; i++) { const k = s.key(i); items.push([k, s.getItem(k)]); }
  return {items};
}"""


@page_verb("storage")
async def verb_storage(act: Act) -> Answer:
    area = str(act.args["area"])
    action = str(act.args.get("action") or "get")
    key, value = act.args.get("key"), act.args.get("value")
    origin = _origin(act.page.url)
    if origin is None:
        raise _usage(
            "storage",
            f"storage is an origin's, and the current page ({act.page.url}) has none: "
            "bay open <url> first",
        )
    if action == "set" and (key is None or value is None):
        raise _usage("storage", "storage set needs <key> <value>")
    if action != "set" and value is not None:
        raise _usage("storage", f"storage {action} takes no value")
    if action == "clear" and key is not None:
        raise _usage("storage", "storage clear takes no key (it clears the whole area)")
    try:
        got = await act.page.evaluate(_STORAGE_JS, [area, action, key, value])
    except Exception as exc:
        raise _failed("storage", exc) from None
    if "error" in got:
        raise Refusal("action_failed", verb="storage", reason=str(got["error"]))
    base = {"area": area, "origin": origin, "url": act.page.url}
    if action == "set":
        if got["value"] != value:
            raise Refusal("action_failed", verb="storage", reason="the page did not keep it")
        return dict(base, key=key, value_chars=len(str(value))), f"set {area}Storage {key}"
    if action == "clear":
        if got["left"]:
            raise Refusal("action_failed", verb="storage", reason=f"{got['left']} item(s) left")
        return dict(base, cleared=got["cleared"]), f"cleared {got['cleared']} item(s) of {origin}"
    if key is not None:
        v = got["value"]
        data = dict(base, key=key, found=v is not None, value=None if v is None else clip(v))
        if v is not None:
            data["value_chars"] = len(v)
        return data, "(not set)" if v is None else clip(v)
    # A page chooses its keys and how many: each key clipped like a value, at most
    # MAX_ITEMS listed (the count says how many there are).
    every = got["items"]
    items = [
        {"key": clip(k), "value": clip(v), "value_chars": len(v)} for k, v in every[:MAX_ITEMS]
    ]
    text = "\n".join(f"{i['key']}={i['value']}" for i in items) or f"(no {area}Storage items)"
    if len(every) > MAX_ITEMS:
        text += f"\n… {len(every) - MAX_ITEMS} more (bay storage {area} get <key>)"
    return dict(base, items=items, count=len(every)), text


def _origin(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return f"{parts.scheme}://{parts.netloc}"


# -- storage state ------------------------------------------------------------------------


@dataclass(frozen=True)
class StorageState:
    """Playwright storage state, checked: cookies and each origin's localStorage."""

    cookies: tuple[dict[str, Any], ...]
    origins: tuple[dict[str, Any], ...]

    def as_playwright(self) -> dict[str, Any]:
        return {"cookies": list(self.cookies), "origins": list(self.origins)}

    def hosts(self) -> list[str]:
        """Every host it would put something in: cookies' domains, origins' hosts."""
        hosts = [str(c["domain"]).lstrip(".") for c in self.cookies]
        hosts += [urlsplit(str(o["origin"])).hostname or "" for o in self.origins]
        return list(dict.fromkeys(hosts))

    def summary(self) -> str:
        items = sum(len(o["localStorage"]) for o in self.origins)
        return (
            f"{len(self.cookies)} cookie(s), {items} localStorage item(s) of "
            f"{len(self.origins)} origin(s)"
        )


def _str_field(where: str, row: dict[str, Any], key: str) -> str:
    value = row.get(key)
    if not isinstance(value, str):
        raise ValueError(f"{where} has no {key} (a string)")
    return value


def parse_state(raw: bytes | str) -> StorageState:
    """A state file's content, checked field by field; ``usage`` naming the first thing wrong
    (nothing is applied of a state that is not valid)."""
    try:
        if len(raw) > MAX_STATE:
            raise ValueError(f"it is {len(raw)} bytes, more than {MAX_STATE}")
        doc = json.loads(raw)
        if not isinstance(doc, dict):
            raise ValueError("it is not a JSON object")
        cookies_in, origins_in = doc.get("cookies", []), doc.get("origins", [])
        if not isinstance(cookies_in, list) or not isinstance(origins_in, list):
            raise ValueError("cookies and origins must be lists")
        cookies: list[dict[str, Any]] = []
        for n, c in enumerate(cookies_in):
            where = f"cookies[{n}]"
            if not isinstance(c, dict):
                raise ValueError(f"{where} is not an object")
            row: dict[str, Any] = {
                k: _str_field(where, c, k) for k in ("name", "value", "domain", "path")
            }
            if not row["name"] or not row["domain"]:
                raise ValueError(f"{where} has an empty name or domain")
            expires = c.get("expires", -1)
            if isinstance(expires, bool) or not isinstance(expires, (int, float)):
                raise ValueError(f"{where}.expires is not a number")
            row["expires"] = float(expires)
            for flag in ("httpOnly", "secure"):
                if not isinstance(c.get(flag, False), bool):
                    raise ValueError(f"{where}.{flag} is not true or false")
                row[flag] = bool(c.get(flag, False))
            same = c.get("sameSite", "Lax")
            if same not in SAME_SITE:
                raise ValueError(f"{where}.sameSite is not Strict, Lax or None")
            row["sameSite"] = same
            cookies.append(row)
        origins: list[dict[str, Any]] = []
        for n, o in enumerate(origins_in):
            where = f"origins[{n}]"
            if not isinstance(o, dict):
                raise ValueError(f"{where} is not an object")
            origin = _str_field(where, o, "origin")
            if _origin(origin) != origin.rstrip("/"):
                raise ValueError(f"{where}.origin is not an http(s) origin")
            items = o.get("localStorage", [])
            if not isinstance(items, list):
                raise ValueError(f"{where}.localStorage is not a list")
            pairs = []
            for m, item in enumerate(items):
                iw = f"{where}.localStorage[{m}]"
                if not isinstance(item, dict):
                    raise ValueError(f"{iw} is not an object")
                pairs.append(
                    {"name": _str_field(iw, item, "name"), "value": _str_field(iw, item, "value")}
                )
            origins.append({"origin": origin.rstrip("/"), "localStorage": pairs})
    except (ValueError, UnicodeDecodeError) as exc:
        raise _usage(
            "state", f"the state is not Playwright storage state ({exc}); nothing was loaded"
        ) from None
    return StorageState(tuple(cookies), tuple(origins))


async def save_state(context: BrowserContext) -> StorageState:
    """The context's cookies and its origins' localStorage, now."""
    got = await context.storage_state()
    return parse_state(json.dumps(got))


async def load_state(context: BrowserContext, state: StorageState, fence: tuple[str, ...]) -> None:
    """Replace the context's cookies and localStorage with ``state`` (Playwright's
    ``set_storage_state``: its origins' storage is written in a page of Playwright's own,
    whose requests are answered in the browser and never reach a site). Every host is
    checked against the fence first: one outside refuses the whole state."""
    for host in state.hosts():
        check_host(host, fence)
    try:
        await context.set_storage_state(cast("PlaywrightState", state.as_playwright()))
    except Exception as exc:
        raise _failed("state", exc) from None


@page_verb("state")
async def verb_state(act: Act) -> Answer:
    """``save``: the state goes back through the connection and the caller's client writes
    the file (0600, beside it first, then renamed: never half-written), its content never in
    the answer. ``load``: the client sent the file's bytes; checked whole before anything is
    applied."""
    context = _context(act)
    given = str(act.args["file"])
    if act.args["action"] == "save":
        state = await save_state(context)
        body = json.dumps(state.as_playwright(), indent=2).encode()
        offer = await act.files.offer_bytes(body, "state.json")
        data = {
            "file": offer.row(),
            "path": given,
            "cookies": len(state.cookies),
            "origins": len(state.origins),
            "url": act.page.url,
        }
        return data, f"saved {state.summary()} to {given} (a secret: mode 0600)"
    if not act.lease.profile.ephemeral:
        raise _usage(
            "state",
            f"state load replaces a browser's cookies and storage, and profile "
            f"{act.lease.profile.label}'s browser is every session's that uses it: load it "
            "into your own ephemeral browser (bay use --ephemeral, or no --profile)",
        )
    up = act.files.take(act.args["file"], "file")
    if up.size > MAX_STATE:
        raise _usage("state", f"the state is {up.size} bytes, more than {MAX_STATE}")
    raw = await anyio.to_thread.run_sync(up.path.read_bytes)
    state = parse_state(raw)
    await load_state(context, state, fence_of(act.lease))
    data = {"cookies": len(state.cookies), "origins": len(state.origins), "url": act.page.url}
    return data, f"loaded {state.summary()} (your browser's earlier cookies and storage are gone)"


# -- new --from-session -----------------------------------------------------------------


async def session_login(session: Session | None, sid: str) -> StorageState:
    """What ``sid``'s own ephemeral browser holds now (``new --from-session``): its cookies
    and localStorage. A session with no ephemeral browser running has nothing to keep:
    ``usage``, and no profile is made."""
    lease = session.leases.get(f"ep-{sid}") if session is not None else None
    if lease is None or lease.context is None:
        raise _usage(
            "new",
            f"session {sid} has no ephemeral browser running, so there is no login to keep: "
            "log in with bay open <url> (without --profile) first, then bay new <label> "
            "--from-session",
        )
    return await save_state(lease.context)


#: How long a session cookie (one with no expiry) of a kept login lasts in the profile.
KEEP_SESSION_COOKIES = 30 * 86400


def kept(state: StorageState, now: float) -> tuple[StorageState, int]:
    """``state`` as a profile keeps it: a browser drops its session cookies (no expiry) when
    it stops, and a login is mostly one, so each is given an expiry
    :data:`KEEP_SESSION_COOKIES` from ``now``. Answers the state and how many were."""
    until = now + KEEP_SESSION_COOKIES
    cookies = tuple(c if c["expires"] >= 0 else dict(c, expires=until) for c in state.cookies)
    made = sum(1 for c in state.cookies if c["expires"] < 0)
    return StorageState(cookies, state.origins), made


async def seed_profile(pool: BrowserPool, row: ProfileRow, state: StorageState) -> None:
    """Copy ``state`` into the new profile's own browser now: started on its directory, the
    state set, then stopped (a clean stop writes Chromium's cookie store to disk), so the
    login is in the profile before anybody uses it. ``state`` is as :func:`kept` made it."""
    running = await pool.persistent(
        row.provider,
        row.id,
        Path(row.dir),
        fence=row.allowed_domains,
        headless=not row.headed,
        proxy=row.proxy,
        options=row.options,
    )
    try:
        context = running.handle.persistent_context
        if context is None:  # pragma: no cover - a provider contract violation
            raise Refusal("action_failed", verb="new", reason="its browser gave no context")
        await load_state(context, state, row.allowed_domains)
    finally:
        with anyio.CancelScope(shield=True):
            await pool.stop(running, "seeded")
