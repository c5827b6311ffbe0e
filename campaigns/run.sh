#!/usr/bin/env bash
# Run one reliability campaign: campaigns/run.sh faults|writes|load|fuzz|census|hostile|triggers|fleet [options]
# Each writes campaigns/results/<name>.json and its figures into RELIABILITY.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
name="${1:-}"
case "$name" in
  faults|writes|load|fuzz|census|hostile|triggers|fleet) shift ;;
  *) echo "usage: campaigns/run.sh faults|writes|load|fuzz|census|hostile|triggers|fleet [options]" >&2; exit 2 ;;
esac
# One command from a fresh checkout: set up first when the environment is missing.
[ -x .venv/bin/python ] || scripts/setup.sh
exec .venv/bin/python -m "campaigns.$name" "$@"
