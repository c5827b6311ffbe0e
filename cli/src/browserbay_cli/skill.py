"""``bay install-skill``: the agent manual (``bay help``) written where an agent harness reads
it — Claude's ``.claude/skills/browserbay/SKILL.md`` (YAML front matter), or a marked block in
``AGENTS.md`` (Codex and other harnesses). Writing again replaces only what it wrote before:
the user's other content is kept byte for byte."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from browserbay.manual import manual
from browserbay.refusals import Refusal

SKILL_NAME = "browserbay"
DESCRIPTION = (
    "Use a web browser of your own through the `bay` command: open pages, read them as an "
    "ARIA snapshot with @eN refs, click and fill by ref, keep logins in named profiles, and "
    "hand the browser to the human (bay handoff) when a login or captcha blocks you."
)
BEGIN = "<!-- browserbay:begin (written by `bay install-skill`; this block is replaced) -->"
END = "<!-- browserbay:end -->"


def _body() -> str:
    """The manual as Markdown: fenced, so its layout survives any renderer."""
    return (
        "# browserbay: a browser of your own (`bay`)\n\n"
        "`bay help` prints this manual for the version installed here; "
        "`bay help <verb>` shows one verb.\n\n"
        f"```text\n{manual().rstrip()}\n```\n"
    )


def skill_file() -> str:
    """Claude's SKILL.md: YAML front matter (name, description), then the manual. The
    description holds ": ", so it is a double-quoted scalar (a JSON string is one)."""
    description = json.dumps(DESCRIPTION, ensure_ascii=False)
    return f"---\nname: {SKILL_NAME}\ndescription: {description}\n---\n\n{_body()}"


def agents_block() -> str:
    return f"{BEGIN}\n{_body()}{END}\n"


def merge_block(existing: str | None, block: str) -> tuple[str, str]:
    """The new AGENTS.md text and what happened: ``created``, ``appended``, ``replaced`` or
    ``unchanged``. Only the text between the markers (inclusive) is ours."""
    if existing is None or existing == "":
        return block, "created"
    begin, end = existing.find(BEGIN), existing.find(END)
    if begin == -1 and end == -1:
        sep = "" if existing.endswith("\n\n") else ("\n" if existing.endswith("\n") else "\n\n")
        return existing + sep + block, "appended"
    if begin == -1 or end == -1 or end < begin or existing.count(BEGIN) > 1:
        raise ValueError(
            "its browserbay block is damaged (a begin marker without an end, or two blocks)"
        )
    stop = end + len(END)
    if existing[stop : stop + 1] == "\n":
        stop += 1
    merged = existing[:begin] + block + existing[stop:]
    return merged, ("unchanged" if merged == existing else "replaced")


def _write(path: Path, text: str) -> None:
    """Atomically: a temporary file beside it, then a rename (keeping an existing mode)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _refuse(path: Path, reason: str, fix: str) -> Refusal:
    return Refusal("install_failed", verb="install-skill", what=str(path), reason=reason, fix=fix)


def _install(kind: str, root: Path) -> dict[str, Any]:
    if kind == "claude":
        path = root / ".claude" / "skills" / SKILL_NAME / "SKILL.md"
    else:
        path = root / "AGENTS.md"
    try:
        existing = path.read_text(encoding="utf-8") if path.exists() else None
        if kind == "claude":
            text = skill_file()
            action = "unchanged" if existing == text else ("replaced" if existing else "created")
        else:
            try:
                text, action = merge_block(existing, agents_block())
            except ValueError as exc:
                raise _refuse(
                    path, str(exc), f"fix the markers in {path} by hand, then run it again"
                ) from None
        if action != "unchanged":
            _write(path, text)
    except OSError as exc:
        raise _refuse(
            path,
            f"{exc.strerror or exc} ({exc.filename or path})",
            "bay install-skill --dir <a project directory you can write>, or fix its permissions",
        ) from None
    return {"kind": kind, "path": str(path), "action": action}


def install_skill(args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    root = Path(str(args.get("dir") or os.getcwd())).absolute()
    kinds = [k for k in ("claude", "codex", "agents") if args.get(k)] or ["agents"]
    if "codex" in kinds and "agents" in kinds:
        kinds.remove("codex")  # both are AGENTS.md
    written = [_install("agents" if k == "codex" else k, root) for k in kinds]
    lines = [f"{w['action']:<9} {w['path']}" for w in written]
    return {"written": written}, "\n".join(lines)
