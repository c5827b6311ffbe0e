"""``bay set …`` on real pages served here, in real Chromium through the real keeper and CLI:
each setting as the page itself sees it (its viewport, user agent, coordinates, onLine, media
queries, Intl, language, the headers our server receives), on tabs opened later too, and
undone by ``close``; bad input changes nothing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from browserbay.api import SyncClient
from browserbay.errors import BayRefusal
from browserbay_testing import Bay, assert_refused

PAGE = """<!doctype html><title>emu</title><p id=out>emulation page</p>
<script>
function geo() {
  return new Promise(done => navigator.geolocation.getCurrentPosition(
    p => done([p.coords.latitude, p.coords.longitude]), e => done('error ' + e.code),
    {timeout: 5000}));
}
async function fetched() {
  try { const r = await fetch('/ping?' + Math.random()); return 'ok ' + r.status; }
  catch (e) { return 'failed ' + e.name; }
}
</script>"""


class _Handler(BaseHTTPRequestHandler):
    server: Site

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.seen.append(dict(self.headers.items()))
        data = (PAGE if self.path.startswith("/page") else "pong").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)


class Site(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[dict[str, str]] = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}/page.html"


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    server = Site()
    yield server
    server.shutdown()


def _js(bay: Bay, s: str, js: str) -> Any:
    return bay.ok("eval", js, session=s)["value"]


def test_viewport_is_what_the_page_measures_and_close_undoes_it(bay: Bay, site: Site) -> None:
    s = "emu-viewport"
    bay.ok("open", site.url, session=s)
    before = _js(bay, s, "[innerWidth, innerHeight]")
    assert before != [375, 640]  # negative control
    got = bay.ok("set", "viewport", "375", "640", session=s)
    assert got["emulation"]["viewport"] == {"width": 375, "height": 640}
    assert _js(bay, s, "[innerWidth, innerHeight]") == [375, 640]
    bay.ok("reload", session=s)
    assert _js(bay, s, "[innerWidth, innerHeight]") == [375, 640]  # it outlives navigation
    bay.ok("tab", "new", site.url, session=s)  # a tab opened later has it too
    assert _js(bay, s, "[innerWidth, innerHeight]") == [375, 640]
    bay.ok("close", session=s)
    bay.ok("open", site.url, session=s)
    assert _js(bay, s, "[innerWidth, innerHeight]") == before
    bay.ok("close", session=s)


def test_device_sets_user_agent_size_and_touch(bay: Bay, site: Site) -> None:
    s = "emu-device"
    bay.ok("open", site.url, session=s)
    assert "iPhone" not in _js(bay, s, "navigator.userAgent")
    bay.ok("set", "device", "iPhone 12", session=s)
    assert "iPhone" in _js(bay, s, "navigator.userAgent")
    # no meta viewport: a phone lays the page out 980 wide, as a real one does
    assert _js(bay, s, "[screen.width, devicePixelRatio, innerWidth]") == [390, 3, 980]
    assert _js(bay, s, "matchMedia('(pointer: coarse)').matches") is True
    bay.ok("reload", session=s)
    assert "iPhone" in site.seen[-1].get("User-Agent", "")  # the server sees it too
    bay.ok("close", session=s)


def test_an_unknown_device_is_refused_naming_close_ones_and_changes_nothing(
    bay: Bay, site: Site
) -> None:
    s = "emu-nodevice"
    bay.ok("open", site.url, session=s)
    bay.ok("set", "viewport", "500", "400", session=s)
    r = bay("set", "device", "iPhone 99", session=s)
    assert_refused(r, "device_unknown")
    assert "iPhone" in r.frame["message"]
    assert _js(bay, s, "innerWidth") == 500
    assert_refused(bay("set", "viewport", "wide", "400", session=s), "usage")
    assert_refused(bay("set", "timezone", "Mars/Olympus", session=s), "action_failed")
    assert _js(bay, s, "Intl.DateTimeFormat().resolvedOptions().timeZone") != "Mars/Olympus"
    assert _js(bay, s, "innerWidth") == 500
    bay.ok("close", session=s)


def test_geo_grants_the_permission_and_gives_the_coordinates(bay: Bay, site: Site) -> None:
    s = "emu-geo"
    bay.ok("open", site.url, session=s)
    bay.ok("set", "geo", "52.52", "13.405", session=s)
    assert _js(bay, s, "geo()") == [52.52, 13.405]
    bay.ok("close", session=s)
    bay.ok("open", site.url, session=s)
    assert _js(bay, s, "geo()") != [52.52, 13.405]  # close undid the grant and coordinates
    bay.ok("close", session=s)


def test_offline_fails_the_page_fetch_and_on_again_works(bay: Bay, site: Site) -> None:
    s = "emu-offline"
    bay.ok("open", site.url, session=s)
    assert _js(bay, s, "fetched()") == "ok 200"
    bay.ok("set", "offline", "on", session=s)
    assert _js(bay, s, "navigator.onLine") is False
    assert _js(bay, s, "fetched()") == "failed TypeError"
    bay.ok("set", "offline", "off", session=s)
    assert _js(bay, s, "navigator.onLine") is True
    assert _js(bay, s, "fetched()") == "ok 200"
    bay.ok("close", session=s)


def test_media_sets_color_scheme_and_reduced_motion(bay: Bay, site: Site) -> None:
    s = "emu-media"
    bay.ok("open", site.url, session=s)
    q = (
        "[matchMedia('(prefers-color-scheme: dark)').matches,"
        " matchMedia('(prefers-reduced-motion: reduce)').matches]"
    )
    assert _js(bay, s, q) == [False, False]
    bay.ok("set", "media", "dark", "reduced-motion", session=s)
    assert _js(bay, s, q) == [True, True]
    bay.ok("set", "media", "light", session=s)
    assert _js(bay, s, q) == [False, True]
    bay.ok("close", session=s)


def test_timezone_and_locale_are_what_intl_and_navigator_say(bay: Bay, site: Site) -> None:
    s = "emu-intl"
    bay.ok("open", site.url, session=s)
    tz = "Intl.DateTimeFormat().resolvedOptions().timeZone"
    assert _js(bay, s, tz) != "Asia/Tokyo"
    bay.ok("set", "timezone", "Asia/Tokyo", session=s)
    bay.ok("set", "locale", "de-DE", session=s)
    assert _js(bay, s, tz) == "Asia/Tokyo"
    assert _js(bay, s, "navigator.language") == "de-DE"
    assert _js(bay, s, "(1234.5).toLocaleString()") == "1.234,5"
    bay.ok("reload", session=s)
    assert site.seen[-1].get("Accept-Language", "").startswith("de-DE")
    bay.ok("close", session=s)
    bay.ok("open", site.url, session=s)
    assert _js(bay, s, tz) != "Asia/Tokyo"
    assert _js(bay, s, "navigator.language") != "de-DE"
    bay.ok("close", session=s)


def test_headers_reach_the_server_and_their_values_are_never_shown(bay: Bay, site: Site) -> None:
    s = "emu-headers"
    bay.ok("open", site.url, session=s)
    r = bay("set", "headers", '{"X-Bay-Test": "HEADERSECRET"}', session=s)
    assert r.frame["ok"], r.frame
    assert "HEADERSECRET" not in r.stdout + r.stderr
    assert r.data["emulation"]["headers"] == ["X-Bay-Test"]
    bay.ok("reload", session=s)
    assert site.seen[-1].get("X-Bay-Test") == "HEADERSECRET"
    assert_refused(bay("set", "headers", "[1]", session=s), "usage")
    bay.ok("close", session=s)
    bay.ok("open", site.url, session=s)
    assert "X-Bay-Test" not in site.seen[-1]
    bay.ok("close", session=s)


def test_the_python_api_emulates_and_prints_pdf(bay: Bay, site: Site, tmp_path: Path) -> None:
    bay.ok("keeper", "start", session=None)
    with SyncClient("emu-api", home=bay.home) as c:
        c.open(site.url)
        got = c.emulate("viewport", 411, 731)
        assert got.data["emulation"]["viewport"] == {"width": 411, "height": 731}
        c.emulate("headers", {"X-Api": "APISECRET"})
        c.emulate("media", "dark")
        assert c.eval("[innerWidth, matchMedia('(prefers-color-scheme: dark)').matches]").value == [
            411,
            True,
        ]
        c.reload()
        assert site.seen[-1].get("X-Api") == "APISECRET"
        out = tmp_path / "api.pdf"
        assert c.pdf(out).data["bytes"] == len(out.read_bytes())
        assert out.read_bytes().startswith(b"%PDF-")
        with pytest.raises(BayRefusal) as caught:
            c.emulate("device", "Nokia 9000 Communicatorr")
        assert caught.value.code == "device_unknown"
        c.close()


def test_settings_on_a_shared_profile_never_reach_another_sessions_tabs(
    bay: Bay, site: Site
) -> None:
    """Attack: two sessions share a persistent profile's browser context; one sets the
    viewport, offline, a timezone and headers so the other's pages change. The settings are
    overrides on the setter's own tabs: the other's stay as they were."""
    bay.ok("new", "emu-shared")
    a, b = "emu-shared-a", "emu-shared-b"
    for s in (a, b):
        bay.ok("use", "emu-shared", session=s)
        bay.ok("open", site.url, session=s)
    before = _js(bay, b, "[innerWidth, Intl.DateTimeFormat().resolvedOptions().timeZone]")
    bay.ok("set", "viewport", "320", "480", session=a)
    bay.ok("set", "timezone", "Pacific/Auckland", session=a)
    bay.ok("set", "offline", "on", session=a)
    bay.ok("set", "headers", '{"X-Only-A": "1"}', session=a)
    assert _js(bay, a, "[innerWidth, navigator.onLine]") == [320, False]
    assert _js(bay, b, "[innerWidth, Intl.DateTimeFormat().resolvedOptions().timeZone]") == before
    assert _js(bay, b, "fetched()") == "ok 200"
    assert "X-Only-A" not in site.seen[-1]
    bay.ok("tab", "new", site.url, session=b)  # a tab B opens later: B's own, default
    assert _js(bay, b, "[innerWidth, navigator.onLine]") == [before[0], True]
    bay.ok("close", session=a)
    bay.ok("close", session=b)


def _permission(bay: Bay, s: str) -> str:
    js = "navigator.permissions.query({name: 'geolocation'}).then(p => p.state)"
    return str(_js(bay, s, js))


def test_geo_on_a_shared_profile_grants_and_restores_only_the_setters_origins(
    bay: Bay, site: Site
) -> None:
    """Attack: two sessions share a persistent profile's browser context. A's ``set geo``
    granted the permission to every origin of the context (B's page on another origin read
    ``granted``), and A's ``close`` cleared every permission of the context (B's own grant
    gone: B's next position was an error). Now a grant is for the setter's origins, and
    ``close`` takes back only what no other session still holds."""
    bay.ok("new", "emu-geo-shared")
    a, b = "emu-geo-a", "emu-geo-b"
    other = site.url.replace("127.0.0.1", "localhost")  # another origin, the same server
    for s, url in ((a, site.url), (b, other)):
        bay.ok("use", "emu-geo-shared", session=s)
        bay.ok("open", url, session=s)
    assert _permission(bay, b) == "prompt"
    bay.ok("set", "geo", "52.52", "13.405", session=a)
    assert _js(bay, a, "geo()") == [52.52, 13.405]
    assert _permission(bay, b) == "prompt"  # A's grant is not B's origin's
    bay.ok("tab", "new", other, session=a)  # a tab of A's that reaches another origin
    assert _js(bay, a, "geo()") == [52.52, 13.405]  # is granted there too
    bay.ok("set", "geo", "-33.86", "151.2", session=b)  # B's origin: both hold it now
    assert _js(bay, b, "geo()") == [-33.86, 151.2]
    bay.ok("close", session=a)
    assert _js(bay, b, "geo()") == [-33.86, 151.2]  # B's grant outlives A's close
    c = "emu-geo-c"  # a third session of the profile, which set nothing
    bay.ok("use", "emu-geo-shared", session=c)
    bay.ok("open", site.url, session=c)
    assert _permission(bay, c) == "prompt"  # A's origin: taken back with A's close
    bay.ok("close", session=b)
    bay.ok("open", other, session=c)
    assert _permission(bay, c) == "prompt"  # and B's with B's
    bay.ok("close", session=c)
