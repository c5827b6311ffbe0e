"""The lean launcher: ``bay`` started as ``python -S``, with the client's own directories on
the module path, in place of the installer's console script.

A console script (``uv sync``, ``uv tool install``, ``pipx``) starts the interpreter with
``site``, which reads every ``.pth`` file of the environment (the workspace venv has one per
editable package, 14) and looks for ``sitecustomize`` on the whole path: ~3 ms of a warm
command's ~13 (bench/RESULTS-perf.md). A warm verb imports only the standard library and
``browserbay``/``browserbay_cli`` (cli/tests/test_cli.py holds it to that), so the launcher
starts the same interpreter without ``site`` and appends the one or two directories that hold
those two packages to ``sys.path``, after the standard library's. What leaves the hot path
(``bay help``, the MCP server, ``bay install``, a verb of a plugin) first completes the path
as ``site`` would have (:func:`browserbay_cli.main.whole_environment`).

    python -m browserbay_cli.launcher [PATH]

writes it over ``PATH`` (default: the ``bay`` beside this interpreter: a venv's, a uv tool's
or a pipx environment's) by a rename, and says what it wrote. ``scripts/setup.sh`` runs it for
the workspace venv; the README says how for the others. Reinstalling the package puts the
installer's script back, which works as before, just slower; so does a launcher whose
directories no longer hold the packages (it falls back to ``site``).
"""

from __future__ import annotations

import os
import sys

import browserbay
import browserbay_cli

#: The longest interpreter path put on the ``#!`` line itself (the kernel reads 256 bytes of
#: it; older ones 128); a longer one, or one with a space, is exec'd through ``/bin/sh``.
SHEBANG_MAX = 120

BODY = """\
# bay: the lean launcher, written by `python -m browserbay_cli.launcher` (browserbay).
# The interpreter starts without `site` (-S); the hot path needs only these directories.
import sys

sys.path += {paths!r}
try:
    from browserbay_cli.hot import main
except ImportError:  # moved or reinstalled elsewhere: the whole path, as `site` makes it
    import site

    site.main()
    from browserbay_cli.hot import main
sys.exit(main())
"""


def package_dirs() -> list[str]:
    """The directories ``browserbay_cli`` and ``browserbay`` are imported from (one, the
    site-packages, for a regular install; two source trees for editable ones)."""
    dirs = [
        os.path.dirname(os.path.dirname(os.path.abspath(m.__file__ or "")))
        for m in (browserbay_cli, browserbay)
    ]
    return list(dict.fromkeys(dirs))


def script(python: str, paths: list[str]) -> str:
    """The launcher's text: ``python -S`` on the ``#!`` line, or through ``/bin/sh`` when the
    path is too long or has a space for one."""
    if len(python) <= SHEBANG_MAX and not any(c.isspace() for c in python):
        head = f"#!{python} -S\n"
    else:  # sh runs the exec line; Python reads those two lines as a string
        quoted = python.replace("'", "'\\''")
        head = f"#!/bin/sh\n'''exec' '{quoted}' -S \"$0\" \"$@\"\n' '''\n"
    return head + BODY.format(paths=paths)


def write(path: str, python: str = sys.executable) -> str:
    """The launcher written over ``path`` (a temporary file renamed onto it, mode 0755):
    answers its text."""
    text = script(python, package_dirs())
    temp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o755)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(temp, 0o755)  # noqa: S103 - an executable, as the console script it replaces
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
    return text


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and args[0].startswith("-")):
        print(
            "usage: python -m browserbay_cli.launcher [PATH]   (default: the bay beside "
            "this interpreter)",
            file=sys.stderr,
        )
        return 2
    path = args[0] if args else os.path.join(os.path.dirname(sys.executable), "bay")
    write(path)
    print(f"wrote the lean launcher {path}: {sys.executable} -S, path {package_dirs()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
