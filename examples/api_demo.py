"""Drive the bundled demo site through the Python API: open the sign-up form, read its
snapshot, fill and submit it by reference, read the result, meet a typed refusal.

    python examples/api_demo.py                 # serves the demo site itself
    python examples/api_demo.py http://127.0.0.1:8000

The keeper starts by itself if none is running (the same one `bay` uses: set BAY_HOME to use
another). The session is BAY_SESSION, else "api-demo".
"""

from __future__ import annotations

import os
import re
import sys

import anyio

from browserbay import Client
from browserbay.errors import BayRefusal, RefStale

# One element a line: ``textbox "Name" @e5`` (the interactive list, under its headings).
_NODE = re.compile(r'^\s*(?P<role>[a-z]+) "(?P<name>[^"]*)".* @(?P<ref>e\d+)\b', re.M)


def refs_by_name(tree: str) -> dict[tuple[str, str], str]:
    """``(role, name) -> @eN`` for the elements of an interactive snapshot."""
    return {(m["role"], m["name"]): "@" + m["ref"] for m in _NODE.finditer(tree)}


async def main(base: str) -> None:
    async with Client(os.environ.get("BAY_SESSION") or "api-demo") as bay:
        page = await bay.open(f"{base}/form.html")
        assert page.profile is not None
        print(f"opened: {page.title} ({page.url}), HTTP {page.status}")
        print(f"profile: {page.profile.label} ({page.profile.id}) · session {page.session.id}")

        snap = await bay.snapshot(interactive=True)
        print(f"snapshot: {snap.refs} references")
        print(snap.tree)
        refs = refs_by_name(snap.tree)
        await bay.fill(refs["textbox", "Name"], "Ada Lovelace")
        await bay.fill(refs["textbox", "Email"], "ada@example.org")
        await bay.select(refs["combobox", "Plan"], "team")
        await bay.check(refs["checkbox", "I accept the terms"])
        await bay.click(refs["button", "Create account"])

        result = await bay.get("title")
        print(f"after submit: {result.value}")
        print((await bay.get("text", "dl")).value)

        try:  # the form's references died with the navigation
            await bay.click(refs["button", "Create account"])
        except RefStale as r:
            print(f"refused [{r.code}]: {r.message}\n  way out: {r.way_out}")
        except BayRefusal as r:  # any other refusal, typed the same way
            print(f"refused [{r.code}]: {r.message}")

        closed = await bay.close()
        print(f"closed {closed.data.get('closed_tabs', 0)} tab(s)")


def run() -> None:
    if len(sys.argv) > 1:
        anyio.run(main, sys.argv[1].rstrip("/"))
        return
    from browserbay.demo.server import serve

    server, base = serve()
    try:
        anyio.run(main, base)
    finally:
        server.shutdown()


if __name__ == "__main__":
    run()
