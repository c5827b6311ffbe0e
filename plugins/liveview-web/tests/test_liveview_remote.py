"""The live view beyond loopback: ``BAY_LIVE_BIND`` on a non-loopback address of this machine
(made by the ``remote_address`` fixture), TLS, ``BAY_LIVE_PUBLIC_URL``, revocation — attacked
first, then driven in a real Chromium from a phone-sized viewport."""

from __future__ import annotations

import hashlib
import http.client
import os
import socket
import ssl
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from browserbay_testing import Bay, assert_refused, wait_for

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


def stats(viewer: Any) -> dict[str, Any]:
    value = viewer.evaluate("window.__live || null")
    return value if isinstance(value, dict) else {}


def state(viewer: Any) -> dict[str, Any]:
    return stats(viewer).get("state") or {}


def listening_on(address: str) -> list[int]:
    """The TCP ports something listens on at ``address`` (from /proc/net/tcp)."""
    want = socket.inet_aton(address)[::-1].hex().upper()
    ports = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, st = line.split()[1], line.split()[3]
        host, port = local.split(":")
        if host == want and st == "0A":  # LISTEN
            ports.append(int(port, 16))
    return ports


def raw_get(
    url: str, headers: dict[str, str] | None = None, tls: bool = True
) -> tuple[int, str, http.client.HTTPMessage]:
    """One GET with exactly these headers (``Host`` included), over TLS without checking the
    certificate (a self-signed one; its fingerprint is checked apart)."""
    parts = urlsplit(url)
    port = parts.port or (443 if tls else 80)
    conn: http.client.HTTPConnection
    if tls:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        conn = http.client.HTTPSConnection(parts.hostname or "", port, timeout=10, context=context)
    else:
        conn = http.client.HTTPConnection(parts.hostname or "", port, timeout=10)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    try:
        conn.request("GET", path, headers=headers or {})
        answer = conn.getresponse()
        return answer.status, answer.read().decode(), answer.headers
    finally:
        conn.close()


# -- attacks ---------------------------------------------------------------------------------


def test_plain_http_on_a_non_loopback_bind_is_refused_and_nothing_listens(
    bay_with: Callable[..., Bay], remote_address: str, session: str
) -> None:
    """On the old code the keeper ignored BAY_LIVE_BIND: the link was http://127.0.0.1 (and
    with a bind honoured but no TLS check, ticket and cookie would cross the network in clear)."""
    bay = bay_with(BAY_LIVE_BIND=f"{remote_address}:0")
    frame = assert_refused(bay("live", session=session), "no_tls")
    assert remote_address in frame["data"]["bind"]
    assert "BAY_LIVE_TLS=self-signed" in frame["way_out"]
    assert listening_on(remote_address) == []
    assert bay.ok("open", "about:blank", session=session)  # the keeper serves on
    assert_refused(bay("live", session=session), "no_tls")  # and stays refused


def test_an_unreadable_or_half_tls_configuration_is_refused(
    bay_with: Callable[..., Bay], remote_address: str, session: str, tmp_path: Path
) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")
    cases = [
        {"BAY_LIVE_TLS_CERT": str(tmp_path / "missing.pem"), "BAY_LIVE_TLS_KEY": str(junk)},
        {"BAY_LIVE_TLS_CERT": str(junk), "BAY_LIVE_TLS_KEY": str(junk)},
        {"BAY_LIVE_TLS_CERT": str(junk)},  # the key forgotten
    ]
    reasons = []
    for env in cases:
        bay = bay_with(BAY_LIVE_BIND=remote_address, **env)
        frame = assert_refused(bay("live", session=session), "tls_unreadable")
        reasons.append(frame["data"]["reason"])
        assert listening_on(remote_address) == []
        bay.stop()
    assert "no such file" in reasons[0]
    assert "not a PEM" in reasons[1]
    assert "BAY_LIVE_TLS_KEY is not set" in reasons[2]


def test_over_tls_a_ticket_is_one_use_the_cookie_is_secure_and_hosts_are_checked(
    bay_with: Callable[..., Bay], remote_address: str, session: str, demo: str
) -> None:
    bay = bay_with(BAY_LIVE_BIND=f"{remote_address}:0", BAY_LIVE_TLS="self-signed")
    bay.ok("open", f"{demo}/live.html?still", session=session)
    first = bay("live", session=session, json_=False)
    assert first.code == 0, first
    url = first.stdout.split()[0]
    assert url.startswith(f"https://{remote_address}:")
    # The fingerprint is printed once, and is the certificate's the server presents.
    fingerprint = bay.ok("live", session=session)["tls_fingerprint"]
    assert f"fingerprint (compare it with the browser's, once): {fingerprint}" in first.stdout
    port = urlsplit(url).port or 0
    der = ssl.PEM_cert_to_DER_cert(ssl.get_server_certificate((remote_address, port)))
    assert fingerprint.replace(":", "") == hashlib.sha256(der).hexdigest().upper()
    again = bay("live", session=session, json_=False)
    assert "https://" in again.stdout
    assert fingerprint not in again.stdout
    # The key is the keeper's secret: 0600 in a 0700 directory under its state.
    keys = list(bay.home.rglob("liveview-tls/self-signed.key"))
    assert len(keys) == 1
    assert stat.S_IMODE(keys[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(keys[0].parent.stat().st_mode) == 0o700
    # Plain HTTP to the TLS port gets no page.
    with pytest.raises((http.client.HTTPException, OSError)):
        raw_get(url, tls=False)
    # The ticket: one use; it buys a Secure, HttpOnly, SameSite=Strict cookie.
    status, _, headers = raw_get(url)
    cookie = headers["Set-Cookie"]
    assert status == 200
    for flag in ("Secure", "HttpOnly", "SameSite=Strict"):
        assert flag in cookie
    token = cookie.split(";", 1)[0]
    assert raw_get(url)[0] == 403  # replayed
    page = url.split("?", 1)[0]
    assert raw_get(page, {"Cookie": token})[0] == 200
    assert raw_get(page, {"Cookie": token, "Host": "evil.example"})[0] == 403
    assert raw_get(page, {"Cookie": token, "Host": f"127.0.0.1:{port}"})[0] == 403


def test_links_carry_the_public_url_and_its_host_and_origin_are_the_ones_accepted(
    bay_with: Callable[..., Bay], session: str, demo: str
) -> None:
    """Behind a reverse proxy (TLS at the proxy, a loopback bind here): the old code printed
    http://127.0.0.1 links and refused the proxy's Host and Origin."""
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    public = "https://bay.example.test/bay"
    local = _free_port()
    bay = bay_with(BAY_LIVE_PUBLIC_URL=public, BAY_LIVE_BIND=f"127.0.0.1:{local}")
    bay.ok("open", f"{demo}/live.html?still", session=session)
    url = bay.ok("live", session=session)["url"]
    assert url.startswith(f"{public}/v/")
    path = urlsplit(url).path.removeprefix("/bay")  # the proxy strips its prefix
    direct = f"http://127.0.0.1:{local}{path}"
    status, _, headers = raw_get(
        f"{direct}?{urlsplit(url).query}", {"Host": "bay.example.test"}, tls=False
    )
    assert status == 200
    cookie = headers["Set-Cookie"]
    assert "Path=/bay/v/" in cookie
    assert "Secure" in cookie  # the browser reaches it over https
    token = cookie.split(";", 1)[0]
    assert raw_get(direct, {"Cookie": token, "Host": "bay.example.test"}, tls=False)[0] == 200
    assert raw_get(direct, {"Cookie": token, "Host": "evil.example"}, tls=False)[0] == 403
    ws = f"ws://127.0.0.1:{local}{path}ws"
    cookie_header = {"Cookie": token}
    with connect(ws, origin="https://bay.example.test", additional_headers=cookie_header):  # type: ignore[arg-type]
        pass
    with pytest.raises(InvalidStatus):
        connect(ws, origin="https://evil.example", additional_headers=cookie_header)  # type: ignore[arg-type]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_revoked_viewer_is_cut_off_and_refused(
    bay_with: Callable[..., Bay],
    remote_address: str,
    session: str,
    demo: str,
    viewer_browser: Any,
) -> None:
    bay = bay_with(BAY_LIVE_BIND=f"{remote_address}:0", BAY_LIVE_TLS="self-signed")
    bay.ok("open", f"{demo}/live.html", session=session)
    url = bay.ok("live", session=session)["url"]
    context = viewer_browser.new_context(viewport=PHONE, ignore_https_errors=True)
    try:
        viewer = context.new_page()
        viewer.goto(url)
        wait_for(lambda: stats(viewer).get("frames", 0) > 0, what="a first frame")
        revoked = bay.ok("live", "--revoke", session=session)
        assert revoked["revoked"] >= 1
        wait_for(lambda: stats(viewer).get("ended"), what="the viewer cut off")
        refusal = stats(viewer)["refusal"]
        assert_refused(refusal, "live_revoked")
        frames = stats(viewer)["frames"]
        viewer.wait_for_timeout(1000)
        assert stats(viewer)["frames"] == frames  # no frame after the cut
        viewer.reload()
        assert "live_revoked" in viewer.content()
        # A new link works again.
        viewer.goto(bay.ok("live", session=session)["url"])
        wait_for(lambda: stats(viewer).get("frames", 0) > 0, what="a frame on a new link")
    finally:
        context.close()


# -- the real thing: a phone over TLS on a non-loopback address --------------------------------


def test_a_phone_over_tls_on_a_remote_address_sees_frames_fit_and_takes_over(
    bay_with: Callable[..., Bay],
    remote_address: str,
    session: str,
    demo: str,
    viewer_browser: Any,
) -> None:
    bay = bay_with(BAY_LIVE_BIND=f"{remote_address}:0", BAY_LIVE_TLS="self-signed")
    bay.ok("open", f"{demo}/live.html", session=session)  # animated: frames keep coming
    width, height = bay.ok("eval", "[innerWidth, innerHeight]", session=session)["value"]
    url = bay.ok("live", session=session)["url"]
    assert url.startswith(f"https://{remote_address}:")
    context = viewer_browser.new_context(
        viewport=PHONE,
        device_scale_factor=3,
        is_mobile=True,
        has_touch=True,
        ignore_https_errors=True,
    )
    try:
        viewer = context.new_page()
        viewer.goto(url)
        assert viewer.locator("#overlay-text").inner_text() in ("waiting for a picture…", "")
        first = wait_for(
            lambda: stats(viewer).get("frames", 0) > 0 and stats(viewer), what="a first frame"
        )
        # The waiting text is gone once a picture is drawn.
        wait_for(lambda: viewer.locator("#overlay").is_hidden(), what="the waiting text gone")
        cookies = {c["name"]: c for c in context.cookies()}
        assert cookies["bay_live"]["secure"] is True
        assert cookies["bay_live"]["httpOnly"] is True
        assert cookies["bay_live"]["sameSite"] == "Strict"
        # The picture's drawn box fits inside the phone's viewport, and nothing scrolls.
        box = viewer.evaluate("window.__live.drawn")
        assert box is not None
        assert min(box["left"], box["top"]) >= 0
        assert box["right"] <= PHONE["width"] + 0.5
        assert box["bottom"] <= PHONE["height"] + 0.5
        assert box["right"] - box["left"] > PHONE["width"] * 0.9  # it uses the width
        scroll = viewer.evaluate("[document.documentElement.scrollWidth, innerWidth]")
        assert scroll[0] <= scroll[1]
        # Frames keep flowing.
        wait_for(
            lambda: stats(viewer)["distinct"] >= first["distinct"] + 5 or None,
            timeout=15,
            what="more frames",
        )
        # Take over, tap a cell, hand back: the page saw the click.
        viewer.click("#toggle")
        wait_for(lambda: state(viewer).get("holder") == "you", what="the takeover")
        assert_refused(bay("get", "title", session=session), "browser_paused")
        fx, fy = (20 + 140 * 1 + 60) / width, (80 + 30) / height  # #cell-1-0 (live.html)
        x, y = viewer.evaluate(
            """([fx, fy]) => { const d = window.__live.drawn;
              return [d.left + fx * (d.right - d.left), d.top + fy * (d.bottom - d.top)]; }""",
            [fx, fy],
        )
        viewer.mouse.click(x, y)
        viewer.wait_for_timeout(300)
        viewer.click("#toggle")
        wait_for(lambda: state(viewer).get("holder") == "agent", what="the handback")
        assert bay.ok("get", "text", "#clicked", session=session)["value"] == "cell-1-0"
    finally:
        context.close()
    assert os.path.exists(bay.home)
