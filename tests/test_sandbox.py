"""Issue 15 item 3: Chromium's renderer sandbox was off for every user, not only root.

Playwright adds ``--no-sandbox`` to every launch unless it is told ``chromium_sandbox=True``,
so a hostile page that exploited a renderer bug ran outside any sandbox even for a non-root
keeper. These tests start a real keeper as an unprivileged user (``nobody``, with a private
HOME), open a page on each launch path, and read the real browser's argv and its renderers'
``/proc/<pid>/status`` and namespaces: no ``--no-sandbox`` anywhere, and each renderer runs
under seccomp-bpf in user and PID namespaces of its own. Where the OS gives a non-root user no
sandbox (user namespaces off), a launch is refused loudly, never retried without it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from browserbay import procfs
from browserbay_testing import BAY, Result, assert_refused
from browserbay_testing.asuser import AsUser, argv_of, browser_processes

REPO = Path(__file__).resolve().parents[1]


def _same_python() -> bool:
    """Debian's Python runs the venv's packages only when it is the venv's minor version."""
    try:
        done = subprocess.run(
            ["/usr/bin/python3", "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except OSError:
        return False
    return done.stdout.strip() == str(sys.version_info[:2])


pytestmark = [
    pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user"),
    pytest.mark.skipif(not _same_python(), reason="/usr/bin/python3 is not the venv's Python"),
]

CHROMIUM = "/usr/lib/chromium/chromium"
CLONE_NEWUSER = 0x10000000


def _status(pid: int) -> dict[str, str]:
    rows = Path(f"/proc/{pid}/status").read_text().splitlines()
    return dict(r.split(":\t", 1) for r in rows if ":\t" in r)


def _ns(pid: int, kind: str) -> str:
    return os.readlink(f"/proc/{pid}/ns/{kind}")


def _descendants(root: int) -> list[int]:
    """``root`` and every process below it (renderers are the zygote's children)."""
    return procfs.tree(root)


def _assert_sandboxed(user: AsUser, marker: str) -> tuple[list[str], list[int]]:
    """The browser of ``marker`` (run by ``user``) has no --no-sandbox in its argv or its
    children's, and its renderers run in namespaces of their own under seccomp-bpf."""
    marked = browser_processes(user.uid, marker)
    main = [p for p in marked if not any(x.startswith("--type=") for x in argv_of(p))]
    assert main, f"no browser process of uid {user.uid} carries {marker}"
    browser = min(main)
    end = time.monotonic() + 15  # the first renderer may still be starting
    while True:
        argvs = {pid: argv_of(pid) for pid in _descendants(browser)}
        renderers = [p for p, a in argvs.items() if "--type=renderer" in a]
        if renderers or time.monotonic() > end:
            break
        time.sleep(0.1)
    assert renderers, f"no renderer process among {argvs}"
    for pid, argv in argvs.items():
        assert "--no-sandbox" not in argv, (pid, argv)
    for pid in renderers:
        # seccomp-bpf: a renderer engages its filter once it has started up
        end = time.monotonic() + 10
        while _status(pid)["Seccomp"].strip() != "2" and time.monotonic() < end:
            time.sleep(0.1)
        assert _status(pid)["Seccomp"].strip() == "2", (pid, argvs[pid], _status(pid)["Seccomp"])
        assert _ns(pid, "user") != _ns(browser, "user"), "the renderer shares the browser's userns"
        assert _ns(pid, "pid") != _ns(browser, "pid"), "the renderer shares the browser's pid ns"
        assert _ns(pid, "net") != _ns(browser, "net"), "the renderer shares the browser's network"
    return argvs[browser], renderers


def test_a_non_root_keepers_chromium_runs_its_renderers_sandboxed(
    nobody: AsUser, demo: str
) -> None:
    page = nobody.ok("open", f"{demo}/form.html")
    assert page["status"] == 200
    status = nobody.ok("keeper", "status")
    assert int(str(status["pid"])) > 0
    keeper = int(str(status["pid"]))
    assert Path(f"/proc/{keeper}").stat().st_uid == nobody.uid  # the keeper really is nobody's
    (browser,) = status["browsers"]  # type: ignore[misc]
    argv, _ = _assert_sandboxed(nobody, f"--bay-browser={browser['id']}")
    assert argv[0] == CHROMIUM


def test_a_non_root_keepers_cloak_browser_runs_sandboxed(nobody: AsUser, demo: str) -> None:
    nobody.env.update(
        CLOAKBROWSER_BINARY_PATH=CHROMIUM,  # the stand-in for CloakBrowser's binary
        CLOAKBROWSER_CACHE_DIR=str(nobody.home / "no-cloak-cache"),
    )
    work = nobody.ok("new", "work", "--provider", "cloak")
    nobody.ok("use", str(work["id"]))
    assert nobody.ok("open", f"{demo}/form.html")["status"] == 200
    browsers = nobody.ok("keeper", "status")["browsers"]
    (browser,) = [b for b in browsers if b["profile"] == work["id"]]  # type: ignore[attr-defined]
    argv, _ = _assert_sandboxed(nobody, f"--bay-browser={browser['id']}")
    assert any(a.startswith("--fingerprint=") for a in argv)  # it is the cloak launch path


def test_a_non_root_keepers_phone_browser_runs_sandboxed(nobody: AsUser, demo: str) -> None:
    """The example third-party provider (examples/provider-phone), loaded by module name."""
    phone_src = REPO / "examples" / "provider-phone" / "src"
    nobody.env["PYTHONPATH"] += f":{phone_src}"
    nobody.env["BAY_PLUGIN_MODULES"] = "browserbay_phone.plugin"
    mine = nobody.ok("new", "mine", "--provider", "phone")
    nobody.ok("use", str(mine["id"]))
    assert nobody.ok("open", f"{demo}/form.html")["status"] == 200
    browsers = nobody.ok("keeper", "status")["browsers"]
    (browser,) = [b for b in browsers if b["profile"] == mine["id"]]  # type: ignore[attr-defined]
    assert browser["provider"] == "phone", browser
    _assert_sandboxed(nobody, f"--bay-browser={browser['id']}")


def test_bay_window_browser_of_a_non_root_user_runs_sandboxed(nobody: AsUser, demo: str) -> None:
    """local-window's own Chromium on a private Xvfb display, started outside Playwright."""
    if shutil.which("Xvfb") is None:
        pytest.skip("no Xvfb")
    made = nobody.ok("window", "browser", f"{demo}/form.html")
    assert made["handle"], made
    _assert_sandboxed(nobody, "--force-renderer-accessibility")


def test_bay_chrome_of_a_non_root_user_runs_sandboxed(nobody: AsUser) -> None:
    """The cdp provider's own Chrome (``bay chrome``), started outside Playwright."""
    made = nobody.ok("chrome", "--profile", "mine", "--headless", "--allow-open-port")
    directory = str(nobody.home / "bay")
    _assert_sandboxed(nobody, f"--user-data-dir={directory}")
    assert made


def _without_user_namespaces() -> tuple[str, ...]:
    """A prefix that runs the command in a user namespace (identity-mapped, made by root)
    whose ``user.max_user_namespaces`` is 0: there, like on a kernel with unprivileged user
    namespaces switched off, nobody can make the namespaces Chromium's sandbox needs."""
    script = (
        "import ctypes,os,sys\n"
        "libc=ctypes.CDLL(None,use_errno=True)\n"
        "r,w=os.pipe(); g,h=os.pipe()\n"
        "pid=os.fork()\n"
        "if pid==0:\n"
        "    os.close(w); os.read(r,1)\n"  # wait for the maps
        "    for f,v in (('uid_map','0 0 65536'),('gid_map','0 0 65536')):\n"
        "        open(f'/proc/{os.getppid()}/'+f,'w').write(v)\n"
        "    os.write(h,b'1'); os._exit(0)\n"
        f"assert libc.unshare({CLONE_NEWUSER})==0, os.strerror(ctypes.get_errno())\n"
        "os.write(w,b'1'); os.read(g,1); os.waitpid(pid,0)\n"
        "open('/proc/sys/user/max_user_namespaces','w').write('0')\n"
        "os.execvp(sys.argv[1], sys.argv[1:])\n"
    )
    return ("/usr/bin/python3", "-c", script)


def test_no_sandbox_possible_is_a_loud_refusal_never_a_silent_no_sandbox(
    nobody: AsUser, demo: str
) -> None:
    prefix = _without_user_namespaces()
    probe = nobody.run(["unshare", "--user", "true"], prefix)
    assert probe.code != 0, "user namespaces are still available inside the prefix"
    r = nobody("open", f"{demo}/form.html", prefix=prefix)
    frame = assert_refused(r, "backend_unavailable")
    assert "sandbox" in frame["message"], frame
    assert "max_user_namespaces is 0" in frame["message"], frame
    assert "user namespaces" in frame["way_out"], frame
    # Nothing was started without a sandbox.
    assert not browser_processes(nobody.uid, str(nobody.home)), "a browser was started"
    nobody("keeper", "stop", prefix=prefix, timeout=60)
    doctor = nobody("doctor", prefix=prefix)
    rows = {(x["area"], x["name"]): x for x in doctor.frame["data"]["checks"]}
    row = rows[("browser", "renderer sandbox")]
    assert row["status"] == "fail", row
    assert "max_user_namespaces is 0" in row["detail"], row


def _sandbox_row(doctor: Result) -> dict[str, str]:
    rows = {(x["area"], x["name"]): x for x in doctor.frame["data"]["checks"]}
    row = rows[("browser", "renderer sandbox")]
    assert isinstance(row, dict)
    return row


def test_bay_doctor_says_whether_the_sandbox_is_on(nobody: AsUser, tmp_path: Path) -> None:
    as_root = subprocess.run(
        [BAY, "doctor", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "BAY_HOME": str(tmp_path / "home")},
        timeout=120,
    )
    row = _sandbox_row(Result(as_root.returncode, as_root.stdout, as_root.stderr))
    assert row["status"] == "warn", row
    assert "--no-sandbox" in row["detail"], row
    assert "outside any sandbox" in row["detail"], row
    assert "non-root user" in row["fix"], row
    row = _sandbox_row(nobody("doctor"))
    assert row["status"] == "ok", row
    assert "user namespaces" in row["detail"], row
