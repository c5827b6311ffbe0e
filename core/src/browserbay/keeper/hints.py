"""``bay blocked``: an agent's claim that a page blocked it, recorded as a site hint
``{host, tier, backend, by, at, why}`` and answered with what the hints now say for that
host. A claim, never a detection, and never an escalation: no profile's provider changes.
The tier of a hint that names a backend is derived from the provider's row, never stored."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from browserbay.model import ProviderRow, SessionRef, SiteHint
from browserbay.refusals import Refusal
from browserbay.registry import Db, SiteHints


def _host(url: str, verb: str = "blocked") -> str:
    raw = url.strip()
    host = urlsplit(raw if "://" in raw else f"https://{raw}").hostname
    if not host:
        raise Refusal("usage", detail=f"{url!r} names no host", verb=verb)
    return host.lower()


def _tier(value: Any) -> int | None:
    """The suggested tier as given; :class:`SiteHint` refuses one that is not 1-3."""
    if value in (None, ""):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise Refusal("usage", detail="--tier is 1, 2 or 3", verb="blocked") from None


def hint_row(hint: SiteHint, providers: Mapping[str, ProviderRow]) -> dict[str, Any]:
    row = providers.get(hint.backend or "")
    return {
        "host": hint.host,
        "tier": hint.tier,
        "backend": hint.backend,
        "by": hint.by,
        "at": hint.at,
        "why": hint.why,
        "suggests_tier": row.tier if row is not None else hint.tier,
    }


def _says(hint: dict[str, Any]) -> str:
    what = (
        f"backend {hint['backend']} (tier {hint['suggests_tier']})"
        if hint["backend"]
        else f"tier {hint['tier']}"
        if hint["tier"]
        else "no particular tier"
    )
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(hint["at"]))
    return f"  {when} session {hint['by']} says it is blocked ({hint['why']}); suggests {what}"


def _seen_by(rows: list[SiteHint], by: str | None) -> list[SiteHint]:
    """The hints a caller sees: every one on the owner's channel (``by`` None); on a session
    socket only its own session's (another session's claims say where it browsed)."""
    return rows if by is None else [h for h in rows if h.by == by]


async def listing(
    args: Mapping[str, Any],
    hints: SiteHints,
    db: Db,
    providers: Mapping[str, ProviderRow],
    by: str | None = None,
) -> tuple[dict[str, Any], str]:
    """``bay hints [HOST] [--forget]``: what the hints say, or drop one host's. ``by``: the
    session a session socket is fixed to (its own hints only); None on the owner's."""
    given = str(args.get("host") or "").strip()
    host = _host(given, "hints") if given else None
    if args.get("forget"):
        if host is None:
            raise Refusal(
                "usage", detail="hints --forget needs the host whose hints go", verb="hints"
            )
        dropped = await db(hints.forget, host)
        return {"host": host, "forgotten": dropped}, f"forgot {dropped} hint(s) for {host}"
    rows = [hint_row(h, providers) for h in _seen_by(await db(hints.of, host), by)]
    if not rows:
        return {"hints": []}, f"no site hints{f' for {host}' if host else ''}"
    lines: list[str] = []
    for n, row in enumerate(rows):  # ordered by host: a header where the host changes
        if n == 0 or rows[n - 1]["host"] != row["host"]:
            lines.append(f"{row['host']}:")
        lines.append(_says(row))
    return {"hints": rows}, "\n".join(lines)


async def blocked(
    args: Mapping[str, Any],
    session: SessionRef,
    hints: SiteHints,
    db: Db,
    providers: Mapping[str, ProviderRow],
    by: str | None = None,
) -> tuple[dict[str, Any], str]:
    """``by``: as for :func:`listing` (the hints answered back are the caller's own)."""
    url = str(args.get("url") or "")
    if not url:
        raise Refusal(
            "usage", detail="blocked needs --url (the page that blocked you)", verb="blocked"
        )
    why = str(args.get("why") or "").strip() or "(no reason given)"
    backend = str(args.get("backend") or "").strip() or None
    if backend is not None and backend not in providers:
        raise Refusal(
            "usage",
            detail=f"no installed provider is called {backend!r} (bay plugins lists them)",
            verb="blocked",
        )
    tier = _tier(args.get("tier"))
    hint = SiteHint(_host(url), tier, backend, session.id, time.time(), why[:500])  # type: ignore[arg-type]
    await db(hints.add, hint)
    rows = [hint_row(h, providers) for h in _seen_by(await db(hints.of, hint.host), by)]
    text = "\n".join(
        [
            f"recorded: you say {hint.host} blocked you. This is a claim for the user, not a "
            "switch: nothing was changed, and no profile moves to another tier by itself.",
            f"hints for {hint.host} ({len(rows)}):",
            *(_says(r) for r in rows),
        ]
    )
    return {"host": hint.host, "recorded": hint_row(hint, providers), "hints": rows}, text
