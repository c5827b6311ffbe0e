"""Key store timings: each get/set of the encrypted file store (keys-file) and, where
gnome-keyring is installed, of the OS keychain store (keys-keyring) on a private Secret
Service. The design target is <= 20 ms per get or set (an Argon2-per-entry store costs
~350 ms each); this measures it. Not part of the test suite (a loaded machine is slower).

    .venv/bin/python bench/keys_file.py            # prints a table, rewrites bench/KEYS.md
    BENCH_REPS=50 .venv/bin/python bench/keys_file.py

Each store is measured with 10 other values already in it (a realistic file size). "cold" is
the first call of a fresh process-level store: for the scrypt mode it includes deriving the
key from BAY_KEYS_PASSPHRASE, which a keeper does once.
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPS = int(os.environ.get("BENCH_REPS", "200"))
VALUE = "sk_bench0123456789abcdefghijklmn"


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median": statistics.median(ordered),
        "p95": ordered[int(0.95 * (len(ordered) - 1))],
        "max": ordered[-1],
    }


def _time(fn: Callable[[], object], reps: int) -> list[float]:
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return samples


def _measure(name: str, get: Callable[..., object], set_: Callable[..., object]) -> list[str]:
    for i in range(10):
        set_("cloud:filler", f"field_{i}", VALUE)
    set_("cloud:steel", "api_key", VALUE)
    counter = iter(range(10**9))
    sets = _time(lambda: set_("cloud:steel", "api_key", f"{VALUE}{next(counter)}"), REPS)
    gets = _time(lambda: get("cloud:steel", "api_key"), REPS)
    rows = []
    for op, samples in (("set", sets), ("get", gets)):
        s = _stats(samples)
        rows.append(
            f"| {name} | {op} | {s['median']:.2f} | {s['p95']:.2f} | {s['max']:.2f} | "
            f"{'yes' if s['p95'] <= 20 else 'NO'} |"
        )
    return rows


def _file_rows(root: Path) -> list[str]:
    from browserbay_keys_file import store
    from browserbay_keys_file.store import FileStore

    rows = []
    for mode, passphrase in (("file: key file", None), ("file: scrypt passphrase", "bench pw")):
        directory = root / mode.split()[-1]
        first = FileStore(directory, passphrase)
        first.set("cloud:steel", "api_key", VALUE)
        store._derived.clear()  # a fresh keeper: the first call derives the key
        t = time.perf_counter()
        FileStore(directory, passphrase).get("cloud:steel", "api_key")
        cold = (time.perf_counter() - t) * 1000
        s = FileStore(directory, passphrase)
        rows += _measure(mode, s.get, s.set)
        rows.append(f"| {mode} | cold first get | {cold:.1f} | | | (once per keeper) |")
    return rows


def _keyring_rows(root: Path) -> list[str]:
    from browserbay_keys_keyring import plugin
    from browserbay_testing.secretservice import missing_binaries, private_secret_service

    if missing_binaries():
        return [f"| keyring | - | not measured: missing {', '.join(missing_binaries())} | | | |"]
    with private_secret_service(root / "ss") as env:
        os.environ.update(env)
        plugin.reset()
        try:
            chain = plugin.Keychain()
            return _measure("keyring (gnome-keyring, private bus)", chain.get, chain.set_value)
        finally:
            plugin.reset()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bay-bench-keys-") as tmp:
        root = Path(tmp)
        rows = _file_rows(root) + _keyring_rows(root)
    head = [
        "| store | op | median ms | p95 ms | max ms | p95 <= 20 ms |",
        "|---|---|---|---|---|---|",
    ]
    table = "\n".join(head + rows)
    print(table)
    load = os.getloadavg()
    text = (
        "# Key store timings\n\n"
        "Rewritten by `.venv/bin/python bench/keys_file.py` (see its docstring). "
        f"{REPS} repetitions each, 10 other values in the store.\n\n"
        f"Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC · nproc {os.cpu_count()} · "
        f"load average {load[0]:.2f} · Python {sys.version.split()[0]}\n\n{table}\n"
    )
    Path(__file__).with_name("KEYS.md").write_text(text)


if __name__ == "__main__":
    main()
