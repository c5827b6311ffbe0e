#!/usr/bin/env bash
# Install what the side-by-side benchmarks need, and nothing the project depends on.
#
# Idempotent: every step checks first and does its work only when something is missing.
#   - Node.js + npm (Debian packages) when `npm` is not on PATH
#   - Chromium (Debian package) when /usr/lib/chromium/chromium is missing
#   - agent-browser@0.41.2 installed by npm INSIDE bench/ (bench/package.json +
#     bench/node_modules, git-ignored), its linux-x64 binary made executable
#   - the MiniWoB++ benchmark (PyPI `miniwob`, for its task pages and their core.js) installed
#     with --no-deps into bench/.work/miniwob (git-ignored): bench/miniwob.py serves its html/
#   - @playwright/mcp@0.0.83 installed the same way, for the MCP tool-list row (its tools/list
#     needs no browser: no browser download, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1)
# Assumes the project's own setup has run (/work/main/.venv exists, made by `uv sync`).
set -euo pipefail

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$BENCH")"
AB_VERSION="0.41.2"
PW_MCP_VERSION="0.0.83"
PW_MCP_PKG="$BENCH/node_modules/@playwright/mcp"
AB_PKG="$BENCH/node_modules/agent-browser"
AB_BIN="$AB_PKG/bin/agent-browser-linux-x64"
CHROMIUM="/usr/lib/chromium/chromium"

say() { printf 'bench/setup: %s\n' "$*"; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        say "need root for: $*"; exit 1
    fi
}

apt_updated=0
apt_install() {
    if [ "$apt_updated" -eq 0 ]; then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
        apt_updated=1
    fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

if [ ! -x "$ROOT/.venv/bin/python" ] || [ ! -x "$ROOT/.venv/bin/bay" ]; then
    say "no $ROOT/.venv with bay in it: run the project's setup (scripts/setup.sh, or uv sync) first"
    exit 1
fi

if ! command -v npm >/dev/null 2>&1; then
    say "installing nodejs + npm (Debian packages)"
    apt_install nodejs npm
fi

if [ ! -x "$CHROMIUM" ]; then
    say "installing chromium (Debian package)"
    apt_install chromium
fi

installed=""
if [ -f "$AB_PKG/package.json" ]; then
    installed="$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$AB_PKG/package.json" | head -n1)"
fi
if [ "$installed" != "$AB_VERSION" ] || [ ! -f "$AB_BIN" ]; then
    say "installing agent-browser@$AB_VERSION into $BENCH/node_modules"
    # The binary ships inside the package: --ignore-scripts skips its postinstall, which
    # would try to download it from GitHub. Its engines field asks for Node >= 24; the
    # package is a prebuilt binary, so an older Node only warns.
    (cd "$BENCH" && npm install --no-audit --no-fund --ignore-scripts --engine-strict=false \
        --save-exact --loglevel=error "agent-browser@$AB_VERSION")
fi
if [ ! -x "$AB_BIN" ]; then
    chmod +x "$AB_BIN"
fi

MW_VERSION="1.1.0"
MW_DIR="$BENCH/.work/miniwob"
if [ ! -f "$MW_DIR/miniwob-$MW_VERSION.dist-info/METADATA" ] || [ ! -f "$MW_DIR/miniwob/html/core/core.js" ]; then
    say "installing miniwob==$MW_VERSION (its pages only: --no-deps) into $MW_DIR"
    rm -rf "$MW_DIR"
    mkdir -p "$MW_DIR"
    # Only the files are used (served over HTTP, driven by the tools): none of its Python
    # dependencies (gymnasium, selenium, numpy) are needed, and it is not a project dependency.
    if command -v uv >/dev/null 2>&1; then
        uv pip install --quiet --no-deps --target "$MW_DIR" "miniwob==$MW_VERSION"
    else
        python3 -m pip install --quiet --no-deps --target "$MW_DIR" "miniwob==$MW_VERSION"
    fi
fi

pw_installed=""
if [ -f "$PW_MCP_PKG/package.json" ]; then
    pw_installed="$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$PW_MCP_PKG/package.json" | head -n1)"
fi
if [ "$pw_installed" != "$PW_MCP_VERSION" ]; then
    say "installing @playwright/mcp@$PW_MCP_VERSION into $BENCH/node_modules"
    (cd "$BENCH" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-audit --no-fund \
        --ignore-scripts --save-exact --loglevel=error "@playwright/mcp@$PW_MCP_VERSION")
fi

version="$("$AB_BIN" --version 2>/dev/null || true)"
case "$version" in
    *"$AB_VERSION"*) say "ready: $version, $("$CHROMIUM" --version 2>/dev/null), miniwob $MW_VERSION" ;;
    *) say "agent-browser does not run: got '$version'"; exit 1 ;;
esac
