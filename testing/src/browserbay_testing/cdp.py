"""A real Chromium started with a debugging port: somebody else's browser, as far as bay is
concerned."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

CHROMIUM = "/usr/lib/chromium/chromium"
FLAGS = (
    "--headless=new",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-breakpad",
    "--disable-crash-reporter",
)


def chromium() -> str:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    return CHROMIUM


@dataclass
class DebugBrowser:
    """A Chromium bay did not start: ``--remote-debugging-port=0`` on its own directory."""

    proc: subprocess.Popen[bytes]
    user_data_dir: Path
    port: int

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.http + path, timeout=5) as r:
            return json.loads(r.read())

    def pages(self) -> list[dict[str, Any]]:
        return [t for t in self.get("/json/list") if t["type"] == "page"]

    def answers(self) -> bool:
        try:
            self.get("/json/version")
        except OSError:
            return False
        return self.proc.poll() is None

    def close(self) -> None:
        """``Browser.close`` over CDP (never a signal: it would leave its lock behind)."""
        if self.proc.poll() is None:
            try:
                with connect(self.get("/json/version")["webSocketDebuggerUrl"]) as ws:
                    ws.send(json.dumps({"id": 1, "method": "Browser.close"}))
                    ws.recv(timeout=5)
            except Exception:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                self.proc.wait(10)


def start_debug_browser(user_data_dir: Path, address: str | None = None) -> DebugBrowser:
    """``address``: the debugging port's bind address (``--remote-debugging-address``)."""
    exe = chromium()
    home = user_data_dir.parent / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home)}
    argv = [exe, *FLAGS, "--remote-debugging-port=0", f"--user-data-dir={user_data_dir}"]
    if address:
        argv.append(f"--remote-debugging-address={address}")
    if os.geteuid() == 0:
        argv.append("--no-sandbox")
    log = open(user_data_dir.parent / "chromium.log", "wb")  # noqa: SIM115 - the child holds it
    proc = subprocess.Popen(
        [*argv, "about:blank"], stdout=log, stderr=log, env=env, start_new_session=True
    )
    log.close()
    port_file = user_data_dir / "DevToolsActivePort"
    end = time.monotonic() + 20
    while time.monotonic() < end:
        try:
            port = int(port_file.read_text().split("\n")[0])
            browser = DebugBrowser(proc, user_data_dir, port)
            if browser.answers():
                return browser
        except (OSError, ValueError, IndexError):
            pass
        time.sleep(0.05)
    proc.terminate()
    raise AssertionError(f"Chromium did not open its debugging port: {port_file}")


class Raw:
    """A bare CDP client (no Playwright): one call at a time, or one left in flight."""

    def __init__(self, url: str):
        self._stack = contextlib.ExitStack()
        self.ws: ClientConnection = self._stack.enter_context(connect(url, max_size=None))
        self.n = 0
        self.answers: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None, sid: str = "") -> int:
        self.n += 1
        msg: dict[str, Any] = {"id": self.n, "method": method, "params": params or {}}
        if sid:
            msg["sessionId"] = sid
        self.ws.send(json.dumps(msg))
        return self.n

    def wait(self, n: int, timeout: float = 20) -> dict[str, Any]:
        end = time.monotonic() + timeout
        while n not in self.answers:
            self._keep(json.loads(self.ws.recv(timeout=max(0.01, end - time.monotonic()))))
        return self.answers.pop(n)

    def _keep(self, msg: dict[str, Any]) -> None:
        if "id" in msg:
            self.answers[msg["id"]] = msg
        else:
            self.events.append(msg)

    def event(self, method: str, timeout: float = 20) -> dict[str, Any]:
        """The first event of that name received (the answers meanwhile are kept)."""
        end = time.monotonic() + timeout
        while True:
            for i, msg in enumerate(self.events):
                if msg.get("method") == method:
                    return self.events.pop(i)
            self._keep(json.loads(self.ws.recv(timeout=max(0.01, end - time.monotonic()))))

    def call(self, method: str, params: dict[str, Any] | None = None, sid: str = "") -> Any:
        return self.wait(self.send(method, params, sid))

    def close(self) -> None:
        self._stack.close()


def refusal(answer: dict[str, Any]) -> dict[str, Any]:
    """The typed refusal a CDP error carries (its ``data``)."""
    assert "error" in answer, answer
    frame = json.loads(answer["error"]["data"])
    assert isinstance(frame, dict)
    return frame


def attach(raw: Raw, target: str) -> str:
    answer = raw.call("Target.attachToTarget", {"targetId": target, "flatten": True})
    return str(answer["result"]["sessionId"])
