#!/usr/bin/env bash
# Idempotent set-up on a fresh machine: a virtualenv in .venv with the project and every extra.
# Re-running it only reinstalls when pyproject.toml, requirements.lock or the editable mode changed.
#
#   scripts/setup.sh              pure Python (the default; removes a compiled build)
#   scripts/setup.sh --compiled   also compile the hot modules with mypyc, in place (needs a C
#                                 compiler and Python's headers; rebuilt only when a source
#                                 changed): see scripts/build_compiled.py, docs/benchmarks.md
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
BUILD=pure
case "${1:-}" in
    "") ;;
    --compiled) BUILD=compiled ;;
    *) echo "usage: scripts/setup.sh [--compiled]" >&2; exit 2 ;;
esac
# compat: a plain .pth path entry for the checkout, which type checkers follow; setuptools'
# default editable install is an import hook that mypy and pyright cannot see through.
EDITABLE_MODE=compat
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "setup: Python >= 3.11 is required (found $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
    exit 1
fi
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
stamp=.venv/.installed-$( { cat pyproject.toml requirements.lock; echo "editable_mode=$EDITABLE_MODE"; } | sha1sum | cut -c1-12)
if [ ! -f "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".[all]" --constraint requirements.lock --config-settings editable_mode="$EDITABLE_MODE"
    rm -f .venv/.installed-*
    touch "$stamp"
fi
if [ "$BUILD" = compiled ]; then
    .venv/bin/python scripts/build_compiled.py
else
    .venv/bin/python scripts/build_compiled.py --clean
fi
