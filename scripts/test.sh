#!/usr/bin/env bash
# Set up, then lint, type-check and run every test (real Chromium, real SQLite).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$HOME/.local/bin:$PATH"
echo "== ruff" >&2
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== mypy" >&2
.venv/bin/mypy
echo "== import contracts" >&2
.venv/bin/lint-imports
echo "== unasync" >&2
scripts/unasync.py --check
echo "== pytest" >&2
exec .venv/bin/pytest "$@"
