"""Security census of one working installation (its own BAY_HOME):

- **Private modes**: every directory 0700 (state, data, runtime, logs, socket dir, browsers,
  each profile, keys, archive, outputs), every file of ours 0600 (registry and its WAL/SHM,
  keeper log, key files, socket), nothing group/other-readable anywhere under the home
  outside the browsers' own stores.
- **Planted secrets** — a provider key set through ``bay keys set`` (stdin), a password
  typed with ``bay fill … -`` (stdin) and through the API, a cookie value a loopback site
  sets in a header — appear in no answer (every stdout/stderr and API frame), log, audit or
  other registry row, hook trace (the recorder plugin's JSONL, standing in for an
  integrator's trace), action trace (the ``trace`` plugin's records and frames, and the HTML
  reports ``bay trace show`` writes for both sessions), argv or environment of any process of
  this installation, nor in any file under the home except the browser's own profile store
  (where a cookie belongs).
- **The live view** (``bay live``) refuses a missing ticket, a forged one, a replayed one, a
  foreign Origin, no Origin, and a foreign Host.
- **Debugging ports**: no browser process of ours listens on TCP, except the one a ``cdp``
  profile asked for (``bay chrome`` — reported, loopback only); the keeper listens on
  loopback only.

Run: campaigns/run.sh census
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import secrets
import signal
import stat
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, ClassVar

from browserbay import procfs
from campaigns.common import (
    ROOT,
    Home,
    descendants,
    environ_of,
    home,
    machine,
    record,
    table,
    tcp_listeners_of,
    today,
)


class _Site(http.server.BaseHTTPRequestHandler):
    """A loopback site that logs you in with a cookie set in a header (never in a URL)."""

    cookie = ""
    seen: ClassVar[
        list[bool]
    ] = []  # requests that came back with the cookie (the positive control)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        body = b"<!doctype html><title>census</title><form><input name=password type=password>"
        body += b"<input name=name></form>"
        self.seen.append(f"sid={self.cookie}" in (self.headers.get("Cookie") or ""))
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        if self.path == "/login":
            self.send_header("Set-Cookie", f"sid={self.cookie}; Path=/; Max-Age=3600; HttpOnly")
        self.end_headers()
        self.wfile.write(body)


def _site(cookie: str) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = type("Site", (_Site,), {"cookie": cookie, "seen": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


# -- modes -----------------------------------------------------------------------------------


def mode_problems(h: Home) -> tuple[int, list[str]]:
    p = h.paths
    dirs = [p.state, p.data, p.runtime, p.logs, p.browsers, p.outputs, p.socket.parent]
    for extra in ("profiles", "keys", "archive", "traces"):
        if (p.data / extra).exists():
            dirs.append(p.data / extra)
    if (p.data / "profiles").is_dir():
        dirs += [d for d in (p.data / "profiles").iterdir() if d.is_dir()]
    files = [p.registry, p.keeper_log, p.socket]
    files += [f for f in p.state.glob("registry.sqlite3-*")]
    if (p.data / "keys").is_dir():
        files += [f for f in (p.data / "keys").iterdir() if f.is_file()]
    if (p.data / "archive").is_dir():
        files += [f for f in (p.data / "archive").iterdir() if f.is_file()]
    if (p.data / "traces").is_dir():  # the trace plugin's records, frames and reports
        dirs += [d for d in (p.data / "traces").iterdir() if d.is_dir()]
        files += [f for f in (p.data / "traces").rglob("*") if f.is_file()]
    problems = []
    for d in dirs:
        if d.exists() and stat.S_IMODE(d.stat().st_mode) != 0o700:
            problems.append(f"{d} is {oct(stat.S_IMODE(d.stat().st_mode))}, not 0700")
    for f in files:
        if f.exists() and stat.S_IMODE(f.stat().st_mode) & 0o077:
            problems.append(f"{f} is {oct(stat.S_IMODE(f.stat().st_mode))}: others may read it")
    # Anything else of ours that others could read (the browsers' own stores aside: Chromium
    # keeps its modes inside a private directory).
    own = [p.state, p.logs, p.data / "keys", p.data / "archive", p.outputs]
    for top in own:
        if not top.is_dir():
            continue
        for path in top.rglob("*"):
            if path.is_file() and stat.S_IMODE(path.stat().st_mode) & 0o077 and path not in files:
                problems.append(f"{path} is {oct(stat.S_IMODE(path.stat().st_mode))}")
    return len(dirs) + len(files), problems


# -- secrets ---------------------------------------------------------------------------------


def _our_processes(h: Home) -> list[int]:
    keepers = h.keeper_pids()
    pids = set(keepers)
    for k in keepers:
        pids.update(descendants(k))
    root = str(h.root)
    for pid in procfs.pids():
        env = environ_of(pid)
        if env.get("BAY_HOME") == root or env.get("HOME", "").startswith(root + "/"):
            pids.add(pid)
    pids.discard(os.getpid())
    return sorted(pids)


def secret_hits(
    h: Home, planted: dict[str, str], texts: list[str], allowed: list[Path]
) -> tuple[dict[str, int], list[str]]:
    """Where each planted secret shows up. ``allowed``: directories where a value belongs
    (the browser's own store for a cookie)."""
    counts = {"answers": len(texts), "files": 0, "processes": 0}
    problems = []
    for name, value in planted.items():
        for n, text in enumerate(texts):
            if value in text:
                problems.append(f"the {name} is in answer {n}: {text[:120]!r}")
    for path in h.root.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        counts["files"] += 1
        try:
            data = path.read_bytes()
        except OSError:
            continue
        for name, value in planted.items():
            if value.encode() in data:
                # A page's cookie or a typed value may sit in the browser's own store; a
                # provider key never reaches a browser of this census.
                if name == "key" or not any(a in path.parents for a in allowed):
                    problems.append(f"the {name} is in {path}")
                else:
                    counts["in_browser_store"] = counts.get("in_browser_store", 0) + 1
    for pid in _our_processes(h):
        counts["processes"] += 1
        for part in ("cmdline", "environ"):
            try:
                data = Path(f"/proc/{pid}/{part}").read_bytes()
            except OSError:
                continue
            for name, value in planted.items():
                if value.encode() in data:
                    problems.append(f"the {name} is in the {part} of pid {pid}")
    return counts, problems


# -- the action trace ------------------------------------------------------------------------


def trace_reports(h: Home, bay: Any, texts: list[str]) -> dict[str, Any]:
    """``bay trace show`` for the CLI session and the API session (each writes an HTML report
    under the traces dir, searched with every other file); what there is to search."""
    listed = h.bay("plugins", "--json", session="census")
    texts.extend([listed.stdout, listed.stderr])
    try:
        loaded = any(p["name"] == "trace" for p in json.loads(listed.stdout)["data"]["plugins"])
    except (ValueError, KeyError, TypeError):
        loaded = False
    bay("trace", "show", "--last", "50")
    api = h.call("api-agent", "trace", action="show", last=50)
    texts.append(repr(api))
    root = h.paths.data / "traces"
    files = [f for f in root.rglob("*") if f.is_file()] if root.is_dir() else []
    return {
        "loaded": loaded,
        "records": sum(f.suffix == ".json" for f in files),
        "frames": sum(f.suffix == ".jpg" for f in files),
        "reports": sum(f.suffix == ".html" for f in files),
        "api_report": bool(api.get("ok")),
    }


# -- the live view ---------------------------------------------------------------------------


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, dict(answer.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers)


def _ws(url: str, origin: str | None, cookie: str | None) -> int:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    headers = {"Cookie": cookie} if cookie else {}
    try:
        with connect(url, origin=origin, additional_headers=headers, open_timeout=10):  # type: ignore[arg-type]
            return 101
    except InvalidStatus as exc:
        return int(exc.response.status_code)


def live_view(h: Home, base: str) -> tuple[dict[str, Any], list[str]]:
    h.ok("live", "open", url=f"{base}/")
    frame = h.call("live", "live")
    if not frame.get("ok"):
        return {"checked": False, "why": frame.get("code")}, []
    url = frame["data"]["url"]
    page = url.split("?", 1)[0]
    origin = page.split("/v/", 1)[0]
    ws = "ws" + page[4:] + "ws"
    checks: list[tuple[str, int, int]] = []

    def check(name: str, got: int, want: int) -> None:
        checks.append((name, got, want))

    check("page without a ticket", _get(page)[0], 401)
    check("page with a forged ticket", _get(page + "?ticket=" + secrets.token_urlsafe(32))[0], 403)
    check("socket without a credential", _ws(ws, origin, None), 401)
    status, headers = _get(url)
    check("page with the ticket", status, 200)
    cookie = headers.get("Set-Cookie", "").split(";", 1)[0]
    check("the ticket replayed", _get(url)[0], 403)
    check("socket from a foreign Origin", _ws(ws, "http://evil.example", cookie), 403)
    check("socket without an Origin", _ws(ws, None, cookie), 403)
    check("page for a foreign Host", _get(page, {"Cookie": cookie, "Host": "evil.example"})[0], 403)
    check("socket from its own origin", _ws(ws, origin, cookie), 101)
    h.ok("live", "close")
    check("page after the session closed", _get(page, {"Cookie": cookie})[0], 401)
    problems = [f"live view: {n}: {got}, want {want}" for n, got, want in checks if got != want]
    return {"checked": True, "checks": [f"{n}: {got}" for n, got, _ in checks]}, problems


# -- ports -----------------------------------------------------------------------------------


def ports(h: Home, cdp_pid: int | None) -> tuple[dict[str, Any], list[str]]:
    """Listening TCP sockets of the keeper (loopback only), of the browsers it runs (none),
    and of the browser a cdp profile asked for (`bay chrome`: loopback only, reported)."""
    status = h.ok("ports", "keeper", action="status")
    keeper = status["pid"]
    cdp_tree = set(descendants(cdp_pid)) if cdp_pid else set()
    problems: list[str] = []
    cdp_listeners: list[str] = []
    browser_pids = 0
    for pid in [keeper, *descendants(keeper)]:
        if pid in cdp_tree:
            for item in tcp_listeners_of([pid]):
                if "127.0.0.1:" not in item:
                    problems.append(f"the cdp profile's browser listens beyond loopback: {item}")
                cdp_listeners.append(item.split(" on ", 1)[1])
            continue
        listening = tcp_listeners_of([pid])
        if pid == keeper:
            for item in listening:
                if "127.0.0.1:" not in item and "[0000000000000000FFFF00000100007F]" not in item:
                    problems.append(f"the keeper listens beyond loopback: {item}")
            continue
        cmdline = (
            Path(f"/proc/{pid}/cmdline").read_bytes() if Path(f"/proc/{pid}").exists() else b""
        )
        if b"--bay-browser=" in cmdline or b"chrom" in cmdline:
            browser_pids += 1
        for item in listening:
            problems.append(f"a browser of ours listens on TCP: {item} ({cmdline[:80]!r})")
    return {
        "keeper_listeners": [x.split(" on ", 1)[1] for x in tcp_listeners_of([keeper])],
        "browser_processes": browser_pids,
        "cdp_profile_listeners": sorted(set(cdp_listeners)),
    }, problems


# -- the campaign ----------------------------------------------------------------------------


def run() -> dict[str, Any]:
    started = time.monotonic()
    key = "sk_" + secrets.token_hex(16)
    password = "pw-" + secrets.token_hex(12)
    api_password = "pw-" + secrets.token_hex(12)
    cookie = "ck" + secrets.token_hex(16)
    planted = {
        "key": key,
        "typed password": password,
        "API-typed password": api_password,
        "cookie value": cookie,
    }
    texts: list[str] = []
    problems: list[str] = []
    figures: dict[str, Any] = {}
    server, site = _site(cookie)
    cdp_pid: int | None = None
    with home("census") as h:
        os.environ.update(
            # No keychain here: the user's store is the encrypted key file.
            DBUS_SESSION_BUS_ADDRESS=f"unix:path={h.root}/no-bus",
            PYTHONPATH=str(ROOT / "tests" / "plugins"),
            BAY_PLUGIN_MODULES="recorder",
            BAY_RECORDER_FILE=str(h.root / "trace.jsonl"),
            BAY_TRACE="1",  # the action trace is searched too
        )

        def bay(*argv: str, stdin: str | None = None, session: str = "census") -> None:
            p = h.bay(*argv, stdin=stdin, session=session)
            texts.extend([p.stdout, p.stderr])
            if p.returncode != 0:
                problems.append(f"bay {' '.join(argv)} exited {p.returncode}: {p.stderr[-200:]}")

        try:
            bay("keys", "set", "cloud:steel", "api_key", stdin=key + "\n")
            bay("keys", "list")
            bay("keys", "list", "cloud:steel", "--json")
            bay("new", "census")
            bay("use", "census")
            bay("open", f"{site}/login")
            bay("fill", "input[name=password]", "-", stdin=password + "\n")
            bay("snapshot", "-i")
            bay("get", "title", "--json")
            bay("tab", "new", f"{site}/again")
            bay("status", "--json")
            bay("audit", "--json")
            bay("keeper", "status", "--json")
            bay("keeper", "logs")
            api = h.call("api-agent", "open", url=f"{site}/form")
            texts.append(repr(api))
            api = h.call("api-agent", "fill", target="input[name=name]", text=api_password)
            texts.append(repr(api))
            texts.append(repr(h.call("api-agent", "type", target="input[name=name]", text="x")))
            texts.append(repr(h.call("api-agent", "status")))
            # The action trace of both sessions: records, frames and an HTML report each.
            traced = trace_reports(h, bay, texts)
            figures["trace"] = traced
            if not traced.get("loaded"):
                problems.append("the trace plugin is not loaded: traces were not searched")
            elif traced["frames"] < 2 or traced["reports"] < 2:
                problems.append(f"no frames or reports traced: census void for traces {traced}")
            # The positive control: the cookie is in play (the site's next page got it back).
            figures["cookie_sent_back"] = any(server.RequestHandlerClass.seen)  # type: ignore[attr-defined]
            if not figures["cookie_sent_back"]:
                problems.append("the planted cookie never came back to the site: census void")
            n, mode_issues = mode_problems(h)
            figures["modes_checked"] = n
            problems += mode_issues
            live, live_issues = live_view(h, site)
            figures["live_view"] = live
            problems += live_issues
            chrome = h.call(  # the port is asked for by name (open_port_refused without)
                "census",
                "chrome",
                headless=True,
                allow_open_port=True,
                profile="census-cdp",
                timeout=60,
            )
            figures["cdp_profile"] = bool(chrome.get("ok"))
            if chrome.get("ok"):
                cdp_pid = chrome["data"].get("pid")
            else:
                figures["cdp_profile_why"] = f"{chrome.get('code')}: {chrome.get('message')}"
            texts.append(repr(chrome))
            port_figures, port_issues = ports(h, cdp_pid)
            figures["ports"] = port_figures
            problems += port_issues
            stores = [h.paths.data / "profiles", h.paths.data / "chrome", h.paths.browsers]
            counts, secret_issues = secret_hits(h, planted, texts, stores)
            figures["searched"] = counts
            problems += secret_issues
            # Once more after a graceful stop (what the keeper writes as it exits).
            h.bay("keeper", "stop")
            time.sleep(2)
            counts2, secret_issues2 = secret_hits(h, planted, texts, stores)
            figures["searched_after_stop"] = counts2
            problems += [p for p in secret_issues2 if p not in secret_issues]
            trace = h.root / "trace.jsonl"
            figures["trace_lines"] = len(trace.read_text().splitlines()) if trace.exists() else 0
        finally:
            if cdp_pid:  # bay chrome's browser is not the keeper's to stop: ours is the census's
                with contextlib.suppress(ProcessLookupError):
                    os.kill(cdp_pid, signal.SIGTERM)
            server.shutdown()
        h.keep = h.keep or bool(problems)
    figures.update(problems=problems, seconds=round(time.monotonic() - started))
    return figures


def main() -> None:
    f = run()
    live = f.get("live_view", {})
    ports_ = f.get("ports", {})
    searched = f.get("searched", {})
    rows = [
        ("directories and files whose modes were checked", f.get("modes_checked")),
        (
            "planted secrets (key via `bay keys set`, password via `bay fill … -` and the API, "
            "a cookie set in a header)",
            4,
        ),
        (
            "places searched: answers · files under the home · processes (argv + environment)",
            f"{searched.get('answers')} · {searched.get('files')} · {searched.get('processes')}",
        ),
        ("hook-trace lines searched (recorder JSONL)", f.get("trace_lines")),
        (
            "action traces searched (trace plugin): records · frames · HTML reports",
            " · ".join(str(f.get("trace", {}).get(k)) for k in ("records", "frames", "reports")),
        ),
        (
            "live view checks (missing/forged/replayed ticket, foreign Origin/none/Host, revoked)",
            " · ".join(live.get("checks", [])) if live.get("checked") else f"not run: {live}",
        ),
        (
            "TCP listeners: keeper · browser processes of ours (listening: none expected)",
            f"{', '.join(ports_.get('keeper_listeners', [])) or 'none'} · "
            f"{ports_.get('browser_processes')}",
        ),
        (
            "cdp profile (`bay chrome --headless`) listener, asked for",
            ", ".join(ports_.get("cdp_profile_listeners", []))
            or f"none ({f.get('cdp_profile_why', 'no listener found')})",
        ),
        ("problems", len(f["problems"])),
    ]
    md = (
        f"Latest run: {today()} · {machine()} · {f['seconds']} s\n\n"
        + table(rows)
        + "".join(f"\n- {x}" for x in f["problems"][:20])
    )
    record("census", f, md)
    raise SystemExit(1 if f["problems"] else 0)


if __name__ == "__main__":
    main()
