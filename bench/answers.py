"""What an agent reads: the characters of a scripted session's answers (stdout + stderr),
with the footer as it is (only what the agent could get wrong) and with ``BAY_FOOTER=full``
(the line every answer carried before issue 19). Not part of the test suite.

    .venv/bin/python bench/answers.py

The session: on the demo sign-up form, ``open``, ``snapshot -i``, ``fill`` ×2, ``snapshot
-i``, ``get title``, ``click``, ``get title``, ``snapshot -i``, ``get url``, ``close``; once
on the session's own browser, once on a profile it attached with a second one pinned (where
the footer still names the profile). Each variant runs in a session of its own on one
keeper under a /tmp BAY_HOME, stopped at the end.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from browserbay.demo.server import serve

BAY = str(Path(sys.executable).with_name("bay"))
NODE = re.compile(r'- (?:textbox|button) "([^"]+)".*? @(e\d+)\b')


@dataclass
class Read:
    commands: int = 0
    stdout: int = 0
    stderr: int = 0

    @property
    def total(self) -> int:
        return self.stdout + self.stderr


def session(home: str, base: str, name: str, footer: str | None, attach: bool) -> Read:
    env = {**os.environ, "BAY_HOME": home, "BAY_SESSION": name}
    env.pop("BAY_FOOTER", None)
    if footer:
        env["BAY_FOOTER"] = footer
    read = Read()

    def bay(*args: str, count: bool = True) -> str:
        r = subprocess.run([BAY, *args], capture_output=True, text=True, env=env, check=True)
        if count:
            read.commands += 1
            read.stdout += len(r.stdout)
            read.stderr += len(r.stderr)
        return r.stdout

    if attach:  # set up uncounted: two attached, one pinned
        for label in (f"{name}-a", f"{name}-b"):
            bay("new", label, count=False)
            bay("use", label, count=False)
        bay("pin", f"{name}-a", count=False)
        bay("get", "url", count=False)  # the first answer on it says it changed
    bay("open", f"{base}/form.html")
    refs = dict(NODE.findall(bay("snapshot", "-i")))

    def ref(prefix: str) -> str:
        return "@" + next(v for k, v in refs.items() if k.startswith(prefix))

    bay("fill", ref("Name"), "Ada Lovelace")
    bay("fill", ref("Email"), "ada@example.org")
    bay("snapshot", "-i")
    bay("get", "title")
    bay("click", ref("Create"))
    bay("get", "title")
    bay("snapshot", "-i")
    bay("get", "url")
    bay("close")
    return read


def main() -> None:
    server, base = serve()
    home = tempfile.mkdtemp(prefix="bb-answers-")
    try:
        print("| session | footer | commands | stdout | stderr | total |")
        print("|---|---|---|---|---|---|")
        for attach in (False, True):
            where = "two attached, one pinned" if attach else "its own browser"
            rows = {}
            for footer in ("full", None):
                tag = "full" if footer else "now"
                rows[tag] = r = session(home, base, f"m-{tag}-{int(attach)}", footer, attach)
                label = "BAY_FOOTER=full (before)" if footer else "default (now)"
                print(f"| {where} | {label} | {r.commands} | {r.stdout} | {r.stderr} | {r.total} |")
            ratio = rows["now"].total / rows["full"].total
            print(f"| {where} | now / before | | | | {ratio:.2f}× |")
    finally:
        subprocess.run(
            [BAY, "keeper", "stop"], env={**os.environ, "BAY_HOME": home}, capture_output=True
        )
        server.shutdown()


if __name__ == "__main__":
    main()
