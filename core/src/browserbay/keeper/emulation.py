"""``bay set viewport|device|geo|offline|media|timezone|locale|headers`` and ``bay pdf``.

A setting is the session's, on every tab of its lease, tabs opened later included, until
``close`` (:class:`~browserbay.keeper.emulated.LeaseEmulation`: DevTools overrides per page
target, so on a persistent profile another session's tabs keep the browser's own; the
geolocation permission, which Chromium keeps per browser context and origin, is granted for the
origins of the lease's own tabs, and ``close`` takes back only those no other session holds:
:class:`~browserbay.keeper.emulated.GeoGrants`). Bad input
changes nothing: every value is checked before anything is sent, and a value the browser
refuses (an unknown timezone) leaves the settings before on every tab. Header values are
never shown (the row's ``secret_args``; answers name the headers only).

``bay pdf <file>``: the current page as PDF, whose bytes the caller's client writes at its
path (``FILE_OUT``, browserbay.transfer): the keeper never opens it.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from typing import Any

import anyio

from browserbay.keeper.act import Act
from browserbay.keeper.emulated import Emulation, Metrics
from browserbay.keeper.pageverbs import Answer, first_line, page_verb
from browserbay.refusals import Refusal

SETTINGS = ("viewport", "device", "geo", "offline", "media", "timezone", "locale", "headers")
_TAG = re.compile(r"^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$")
_TZ = re.compile(r"^[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*$")


def _usage(detail: str) -> Refusal:
    return Refusal("usage", detail=detail, verb="set")


def _number(word: object, what: str) -> float:
    try:
        value = float(str(word))
    except ValueError:
        raise _usage(f"set: {what} must be a number, not {str(word)[:40]!r}") from None
    if not math.isfinite(value):
        raise _usage(f"set: {what} must be a finite number")
    return value


async def _changed(act: Act, cur: Emulation) -> Emulation:
    """The lease's settings with this call's one change (checked; nothing applied yet)."""
    what = str(act.args["setting"])
    first, second = act.args.get("value"), act.args.get("second")
    if what == "viewport":
        w, h = _number(first, "the width"), _number(second, "the height")
        if not (1 <= w <= 10000 and 1 <= h <= 10000) or w != int(w) or h != int(h):
            raise _usage("set viewport: width and height are whole CSS pixels, 1 to 10000")
        return cur.with_(metrics=Metrics(int(w), int(h)), device=None, user_agent=None)
    if what == "device":
        name = str(first or "")
        devices = await act.devices() if act.devices is not None else {}
        device = devices.get(name)
        if device is None:
            close = difflib.get_close_matches(name, list(devices), n=5, cutoff=0.4)
            if not close:
                close = [n for n in devices if name.lower() and name.lower() in n.lower()][:5]
            raise Refusal("device_unknown", device=name, close=", ".join(close) or "none")
        return cur.with_(metrics=device.metrics, device=device.name, user_agent=device.user_agent)
    if what == "geo":
        lat, lng = _number(first, "the latitude"), _number(second, "the longitude")
        if not (-90 <= lat <= 90 and -180 <= lng <= 180):
            raise _usage("set geo: latitude -90..90, longitude -180..180")
        return cur.with_(geo=(lat, lng))
    if what == "offline":
        word = str(first or "on")
        if word not in ("on", "off") or second is not None:
            raise _usage("set offline takes on or off")
        return cur.with_(offline=word == "on")
    if what == "media":
        scheme = None if first is None else str(first)
        words = [w for w in (scheme, second) if w is not None]
        schemes = [w for w in words if w in ("dark", "light", "no-preference")]
        motion = [w for w in words if w in ("reduced-motion", "no-reduced-motion")]
        if not words or len(schemes) + len(motion) != len(words) or len(schemes) > 1:
            raise _usage("set media takes dark|light [reduced-motion|no-reduced-motion]")
        return cur.with_(
            color_scheme=schemes[0] if schemes else cur.color_scheme,
            reduced_motion=(motion[0] == "reduced-motion") if motion else cur.reduced_motion,
        )
    if what == "timezone":
        tz = str(first or "")
        if not _TZ.match(tz) or len(tz) > 64 or second is not None:
            raise _usage("set timezone takes an IANA name: Europe/Berlin, America/New_York, UTC")
        return cur.with_(timezone=tz)
    if what == "locale":
        tag = str(first or "")
        if not _TAG.match(tag) or len(tag) > 35 or second is not None:
            raise _usage("set locale takes a BCP 47 tag: de-DE, en-US, fr")
        return cur.with_(locale=tag)
    if what == "headers":
        try:
            given = json.loads(str(first or ""))
        except ValueError:
            given = None
        if not isinstance(given, dict) or not all(
            isinstance(k, str) and k and isinstance(v, str) for k, v in given.items()
        ):
            raise _usage("set headers takes a JSON object of header names to string values")
        if any(not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", k) for k in given):
            raise _usage("set headers: a header name may hold letters, digits and -")
        if any("\r" in v or "\n" in v for v in given.values()):
            raise _usage("set headers: a header value holds no line break")
        return cur.with_(headers=dict(given) or None)
    raise _usage(f"set takes one of {', '.join(SETTINGS)}")  # pragma: no cover - choices


@page_verb("set")
async def verb_set(act: Act) -> Answer:
    emulation = act.lease.emulation
    new = await _changed(act, emulation.settings)
    pages = [t.page for t in act.lease.tabs.values()]
    had_geo = emulation.settings.geo is not None
    try:
        if new.geo is not None:
            await emulation.grant_geolocation(pages)
        await emulation.change(new, pages)
        context = act.lease.context
        if act.lease.profile.ephemeral and context is not None:  # a popup's first request too
            await emulation.hold_on_context(context)
    except BaseException as exc:
        if not had_geo:  # bad input changes nothing: no grant is left behind
            with anyio.CancelScope(shield=True):
                await emulation.ungrant()
        if isinstance(exc, Exception) and not isinstance(exc, Refusal):
            raise Refusal("action_failed", verb="set", reason=first_line(exc)) from None
        raise
    shown = new.shown()
    what = str(act.args["setting"])
    value = shown["viewport" if what == "device" else what] if what in shown else None
    if what == "media":
        value = {"color_scheme": new.color_scheme, "reduced_motion": new.reduced_motion}
    if what == "device":
        value = {"device": new.device, "viewport": shown["viewport"]}
    text = f"set {what}: " + (
        ", ".join(shown["headers"] or []) if what == "headers" else json.dumps(value)
    )
    return {"setting": what, "emulation": shown, "tabs": len(pages)}, text


@page_verb("pdf")
async def verb_pdf(act: Act) -> Answer:
    """Chromium prints to PDF headless only: a headed browser's refusal says so."""
    try:
        pdf = await act.page.pdf(print_background=True)
    except Exception as exc:
        reason = first_line(exc)
        if "headless" in reason.lower() or "not implemented" in reason.lower():
            reason = "PDF printing needs a headless browser (this profile's is headed)"
        raise Refusal("action_failed", verb="pdf", reason=reason) from None
    offer = await act.files.offer_bytes(pdf, "page.pdf")
    given = str(act.args["path"])
    data: dict[str, Any] = {"file": offer.row(), "path": given, "bytes": len(pdf)}
    data["url"] = act.page.url
    return data, given
