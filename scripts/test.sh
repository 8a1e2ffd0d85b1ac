#!/usr/bin/env bash
# Every check CI runs: lint (ruff), types (mypy), then the whole pytest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/pytest "$@"
