#!/usr/bin/env bash
# Every check CI runs: lint and formatting (ruff), types (mypy), then the whole pytest suite
# twice: on pure Python, then on the compiled build (scripts/setup.sh --compiled). BUILDS="pure" or
# BUILDS="compiled" runs one of them. The checkout is left in the last build tested.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
for build in ${BUILDS:-pure compiled}; do
    case "$build" in
        pure) bash scripts/setup.sh ;;
        compiled) SECONDS=0; bash scripts/setup.sh --compiled; echo "test.sh: compiled build ready in ${SECONDS} s" ;;
        *) echo "test.sh: unknown build $build (pure, compiled)" >&2; exit 2 ;;
    esac
    echo "test.sh: the test suite on the $build build"
    SECONDS=0
    .venv/bin/pytest "$@"
    echo "test.sh: $build suite passed in ${SECONDS} s"
done
