#!/usr/bin/env python3
"""Write the blocking Python client from the async one: the unasync pattern httpcore uses.

``core/src/browserbay/_sync_api.py`` is ``class Client`` of ``core/src/browserbay/api.py``
with ``async`` and ``await`` taken out and each async name replaced by its blocking twin
(:data:`NAMES`), under the imports of ``api.py`` it still uses, formatted by ruff. Change
``api.py`` and run this script; ``scripts/unasync.py --check`` (in scripts/test.sh) exits 1
when the generated file is not what this script would write.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "core/src/browserbay/api.py"
TARGET = ROOT / "core/src/browserbay/_sync_api.py"
CLASS = "Client"
GENERATED = "browserbay._sync_api"

#: Whole words of the async client and their blocking twins.
NAMES = {
    "Client": "SyncClient",
    "AsyncConnection": "SyncConnection",
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    "aclose": "disconnect",
}
#: The syntax that goes: ``async def`` → ``def``, ``async with`` → ``with``, ``await x`` →
#: ``x`` (in docstrings too: ``await bay.close()`` reads ``bay.close()``).
SYNTAX = ((re.compile(r"\basync (def|with|for)\b"), r"\1"), (re.compile(r"\bawait "), ""))
WORDS = re.compile(r"\b(" + "|".join(map(re.escape, NAMES)) + r")\b")

HEADER = '''"""The blocking client, generated from :class:`browserbay.api.Client` by
``scripts/unasync.py`` — do not edit: change ``api.py`` and run the script again.

The same methods as the async client, without ``await``, over
:class:`browserbay._connection.SyncConnection` (the thin client's own socket code: no event
loop, no thread). Imported as :class:`browserbay.api.SyncClient`.
"""
'''


def unasync(text: str) -> str:
    for pattern, replacement in SYNTAX:
        text = pattern.sub(replacement, text)
    return WORDS.sub(lambda m: NAMES[m[1]], text)


def generate(source: str) -> str:
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    imports: list[str] = []
    body = ""
    for node in tree.body:
        segment = "".join(lines[node.lineno - 1 : node.end_lineno])
        if isinstance(node, ast.ImportFrom) and node.module == GENERATED:
            continue  # api.py re-exports the generated class; the class is not its own import
        if isinstance(node, ast.Import | ast.ImportFrom):
            imports.append(segment)
        elif isinstance(node, ast.ClassDef) and node.name == CLASS:
            body = segment
    if not body:
        raise SystemExit(f"unasync: no class {CLASS} in {SOURCE}")
    return _ruff(HEADER + "\n" + unasync("".join(imports) + "\n\n" + body))


def _ruff(text: str) -> str:
    """Unused imports dropped, the rest sorted, the file formatted: as ruff would ask."""
    venv = ROOT / ".venv/bin/ruff"
    ruff = str(venv) if venv.exists() else shutil.which("ruff")
    if ruff is None:
        raise SystemExit("unasync: ruff is needed (scripts/setup.sh installs it)")
    name = str(TARGET.relative_to(ROOT))
    for cmd in (
        [ruff, "check", "--fix", "--exit-zero", "--quiet", "--select", "F401,I"],
        [ruff, "format", "--quiet"],
    ):
        done = subprocess.run(
            [*cmd, "--stdin-filename", name, "-"],
            input=text,
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        )
        text = done.stdout
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when the generated file is not current"
    )
    wanted = generate(SOURCE.read_text(encoding="utf-8"))
    if parser.parse_args().check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != wanted:
            print(
                f"unasync: {TARGET.relative_to(ROOT)} is not current; run scripts/unasync.py",
                file=sys.stderr,
            )
            return 1
        return 0
    TARGET.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
