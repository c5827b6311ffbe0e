#!/usr/bin/env bash
# Set up browserbay on a fresh Debian/Ubuntu machine: Debian's Chromium (only when no
# Chromium-family browser is there), the test tools (bubblewrap, Xvfb, PostgreSQL, …), uv,
# and the workspace venv in .venv. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

apt_install() {
  # Only when something is missing; apt-get update once.
  if [ -z "${_APT_UPDATED:-}" ]; then
    $SUDO apt-get update -qq
    _APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@"
}

missing=()
if [ -z "${BAY_CHROMIUM_PATH:-}" ] && [ ! -x /usr/lib/chromium/chromium ] \
   && ! command -v chromium >/dev/null 2>&1 && ! command -v google-chrome >/dev/null 2>&1; then
  missing+=(chromium)
fi
command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-pip)
# Fonts make screenshots readable; the browser works without them.
if ! fc-list 2>/dev/null | grep -qi dejavu; then missing+=(fonts-dejavu-core); fi
# The keys-keyring tests run a real Secret Service (gnome-keyring) on a private D-Bus.
command -v dbus-daemon >/dev/null 2>&1 || missing+=(dbus-daemon)
command -v gnome-keyring-daemon >/dev/null 2>&1 || missing+=(gnome-keyring)
command -v secret-tool >/dev/null 2>&1 || missing+=(libsecret-tools)
# The sandbox test runs an agent under bubblewrap with only its session socket (docs/sandboxing.md).
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
# Native windows (the local-window provider and its tests): Xvfb, the AT-SPI bus, Debian's
# python3 with pyatspi for the tree walker, GTK3 for the test app, setpriv (util-linux).
for pkg in xvfb at-spi2-core dbus python3-pyatspi python3-gi gir1.2-gtk-3.0 util-linux; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
# The snapshot tests read real pages nobody here wrote: the Python documentation.
dpkg -s python3-doc >/dev/null 2>&1 || missing+=(python3-doc)
# The registry's contract suite runs on a real PostgreSQL too (initdb + pg_ctl, issue 22).
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
# The live view's remote-bind tests make a non-loopback address of their own (a veth link).
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  apt_install "${missing[@]}"
fi

if ! command -v uv >/dev/null 2>&1; then
  echo "setup: installing uv" >&2
  python3 -m pip install --quiet uv 2>/dev/null \
    || python3 -m pip install --quiet --user --break-system-packages uv
  export PATH="$HOME/.local/bin:$PATH"
fi

# --compile-bytecode, and compileall for the workspace's own (editable) sources: with
# PYTHONDONTWRITEBYTECODE set (a test harness's, a CI's) nothing is ever cached, and every
# `bay` compiles its hot modules again and every keeper all of Playwright and anyio (~0.4 s
# of CPU a keeper start, ~20 ms a warm command; bench/RESULTS-perf.md).
uv sync --quiet --locked --compile-bytecode
.venv/bin/python -m compileall -q -j 0 core/src cli/src testing/src plugins/*/src providers/*/src >/dev/null
# `bay` is the native client (cli/native/bay.c, issue 19: a warm command without an
# interpreter's start), built with cc when a compiler can be had; it hands the rest to
# `bay-py`, the lean launcher: `python -S` with the client's directories on its path (~3 ms
# less a command than the console script uv installs, which reads the venv's 14 .pth files
# first). Without a compiler `bay` is the lean launcher itself. Rebuilt only when bay.c or
# the version it embeds changed (a stamp beside it).
if [ "$(uname -s)" = Linux ] && { ! command -v cc >/dev/null 2>&1 || ! dpkg -s libc6-dev >/dev/null 2>&1; }; then
  echo "setup: installing gcc libc6-dev (the native bay)" >&2
  apt_install gcc libc6-dev || echo "setup: no C compiler: bay stays the Python launcher" >&2
fi
.venv/bin/python -m browserbay_cli.launcher --native >/dev/null
echo "setup: ready (.venv/bin/bay)" >&2
