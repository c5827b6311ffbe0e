"""The README's first command: the demo site, one isolated session, snapshot, fill and
click by reference, the result. Drives the real `bay` CLI, as an agent would."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from browserbay.demo.server import serve

BAY = str(Path(sys.executable).with_name("bay"))


def bay(*args: str) -> dict:
    out = subprocess.run([BAY, "--json", *args], capture_output=True, text=True, check=False)
    frame = json.loads(out.stdout)
    if not frame["ok"]:
        sys.exit(f"bay {' '.join(args)} refused [{frame['code']}]: {frame['message']}")
    return frame


def ref(snapshot: str, role: str, name: str) -> str:
    m = re.search(rf'{role} "{re.escape(name)}"[^\n]*? @(e\d+)\b', snapshot)
    if m is None:
        sys.exit(f"no {role} {name!r} in the snapshot")
    return "@" + m.group(1)


def main() -> None:
    os.environ.setdefault("BAY_SESSION", f"demo-{os.getpid()}")
    server, base = serve()
    try:
        opened = bay("open", f"{base}/form.html")
        p = opened["profile"]
        print(f"$ bay open {base}/form.html\n{opened['data']['title']}")
        print(f"  (session {opened['session']['id']}, profile {p['label']} {p['id']})\n")
        snap = bay("snapshot")["data"]["snapshot"]
        print(f"$ bay snapshot\n{snap}\n")
        name, plan = ref(snap, "textbox", "Name"), ref(snap, "combobox", "Plan")
        terms, submit = (
            ref(snap, "checkbox", "I accept the terms"),
            ref(snap, "button", "Create account"),
        )
        for args in (
            ("fill", name, "Ada Lovelace"),
            ("select", plan, "team"),
            ("check", terms),
            ("click", submit),
        ):
            bay(*args)
            print("$ bay " + " ".join(f'"{a}"' if " " in a else a for a in args))
        title = bay("get", "title")["data"]["value"]
        text = bay("get", "text")["data"]["value"]
        print(f"\n$ bay get title\n{title}\n\n$ bay get text\n{text}")
        ok = title == "Signed up" and "Ada Lovelace" in text and "team" in text
        print("\nresult:", "the form was submitted by reference" if ok else "UNEXPECTED RESULT")
        bay("close")
        if not ok:
            sys.exit(1)
    finally:
        server.shutdown()


if __name__ == "__main__":
    main()
