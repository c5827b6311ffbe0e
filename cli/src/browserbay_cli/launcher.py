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

    python -m browserbay_cli.launcher --native [PATH]

writes the lean launcher as ``bay-py`` beside ``PATH`` and builds the native client
(``cli/native/bay.c``, issue 19: a warm command without an interpreter's start) into ``PATH``
with ``cc -O2``, the version, protocol and limits of this checkout built in; it hands what it
does not do itself to ``bay-py``. Built again only when the source, those values or the
compiler changed (a stamp beside it). Without a compiler (or the source: an install from a
wheel), ``PATH`` is the lean launcher, as without ``--native``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys

import browserbay
import browserbay_cli
from browserbay import _version, protocol

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


#: The native client's source, in a checkout (not in a wheel).
NATIVE_SOURCE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "native",
    "bay.c",
)
#: The Python client's name beside the native one (it execs it for what it hands over).
PYTHON_CLIENT = "bay-py"
NATIVE_FLAGS = ["-O2", "-std=c11", "-Wall", "-Wextra", "-Werror"]


def compiler() -> str | None:
    """The C compiler to build the native client with, or None."""
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found:
            return found
    return None


def native_defines() -> list[str]:
    """What the native client is built with: this checkout's version, protocol and limits."""
    facts = ",".join(f'"{k}"' for k in protocol.ARGV_FACTS)
    return [
        f'-DBAY_VERSION="{_version.__version__}"',
        f"-DBAY_PROTOCOL={_version.PROTOCOL}",
        f"-DBAY_FACTS={facts}",
        f"-DBAY_MAX_ANSWER={protocol.MAX_ANSWER}",
        f"-DBAY_DEFAULT_TIMEOUT={protocol.DEFAULT_TIMEOUT!r}",
        f"-DBAY_MAX_TIMEOUT={protocol.MAX_TIMEOUT!r}",
    ]


def _stamp(cc: str, source: bytes) -> str:
    h = hashlib.sha256(source)
    for part in [os.path.realpath(cc), *NATIVE_FLAGS, *native_defines()]:
        h.update(b"\0" + part.encode())
    return h.hexdigest()


def _is_native(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def build_native(path: str, cc: str, source: str = NATIVE_SOURCE) -> bool:
    """The native client compiled into ``path`` (a temporary file renamed onto it), unless
    the stamp beside it says that very build is there; False when it does not compile."""
    with open(source, "rb") as f:
        text = f.read()
    stamp = _stamp(cc, text)
    stamp_path = os.path.join(os.path.dirname(path), ".bay-native.stamp")
    try:
        with open(stamp_path, encoding="utf-8") as f:
            if f.read().strip() == stamp and _is_native(path):
                return True
    except OSError:
        pass
    temp = f"{path}.{os.getpid()}.native.tmp"
    argv = [cc, *NATIVE_FLAGS, *native_defines(), "-o", temp, source]
    made = subprocess.run(argv, capture_output=True, text=True, check=False)
    if made.returncode != 0:
        if os.path.exists(temp):
            os.unlink(temp)
        print(f"the native bay did not build ({cc}):\n{made.stderr}", file=sys.stderr)
        return False
    os.chmod(temp, 0o755)  # noqa: S103 - an executable
    os.replace(temp, path)
    with open(stamp_path, "w", encoding="utf-8") as f:
        f.write(stamp + "\n")
    return True


def install(path: str, *, native: bool, cc: str | None, python: str = sys.executable) -> str:
    """``bay`` at ``path``: the native client (with the lean launcher as ``bay-py`` beside
    it, which it hands over to) when ``native`` and ``cc`` can build it here, else the lean
    launcher. Answers which: ``"native"`` or ``"python"``."""
    if native:
        write(os.path.join(os.path.dirname(path), PYTHON_CLIENT), python)
        if (
            cc
            and sys.platform == "linux"
            and os.path.exists(NATIVE_SOURCE)
            and build_native(path, cc)
        ):
            return "native"
    write(path, python)
    return "python"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    native = "--native" in args[:1]
    if native:
        args = args[1:]
    if len(args) > 1 or (args and args[0].startswith("-")):
        print(
            "usage: python -m browserbay_cli.launcher [--native] [PATH]   (default: the bay "
            "beside this interpreter)",
            file=sys.stderr,
        )
        return 2
    path = args[0] if args else os.path.join(os.path.dirname(sys.executable), "bay")
    how = install(path, native=native, cc=compiler() if native else None)
    if how == "native":
        py = os.path.join(os.path.dirname(path), PYTHON_CLIENT)
        print(f"built the native bay {path}; it hands the rest to the lean launcher {py}")
        return 0
    if native:
        print("no native bay here (no C compiler, not Linux or no source): the lean launcher")
    print(f"wrote the lean launcher {path}: {sys.executable} -S, path {package_dirs()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
