#!/usr/bin/env bash
# The main job, on a fresh machine:
#   1. set up .venv (scripts/setup.sh),
#   2. simulate the default commit-latency scenario and print its report
#      (run directory: runs/default: Parquet tables, summary.json, PNG plots),
#   3. run the default study (a grid of simulations) on local Spark and write its report
#      (runs/study/report.md with tables and plots; its path is printed at the end).
# PySpark needs Java 17+: step 3 checks for it first and says in one line how to install it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m sim run default --seed 1 --out runs/default
.venv/bin/python -m sim.sweep.java
.venv/bin/python -m sim sweep default --out runs/study
