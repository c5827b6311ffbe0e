#!/usr/bin/env bash
# Set up the peer tools (idempotent), then run every benchmark once and rewrite RESULTS.md.
set -euo pipefail
BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$BENCH/setup.sh"
exec "$BENCH/../.venv/bin/python" "$BENCH/run.py" "$@"
