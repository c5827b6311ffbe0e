#!/usr/bin/env bash
# Set up, then run the main job on the bundled demo site: an isolated session opens the
# sign-up form, prints its snapshot, fills and clicks by reference and prints the result.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/python scripts/demo.py "$@"
