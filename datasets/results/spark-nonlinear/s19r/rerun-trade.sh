#!/usr/bin/env bash
# s19r: the trade program (examples/trade/trade.dl; r3 nonlinear, r1 symmetric) on a synthetic
# database of 320 countries (bench.py trade_db: 102,400 dealsWith facts; N/4 = 80 countries,
# 6,400), BASE's selp against this tree's, as rerun.sh: warm sessions, alternating, 2 warm + 5
# measured repetitions, wall and CPU seconds.
# Usage, from the tree to measure: bash datasets/results/spark-nonlinear/s19r/rerun-trade.sh [BASE] [OUT]
set -eu
BASE=${1:-deaa1b0}
OUT=${2:-/tmp/s19r-trade}
cd "$(dirname "$0")/../../../.."
mkdir -p "$OUT"
uptime
PYTHONPATH=. flock /work/bench.lock python3 datasets/results/spark-nonlinear/bench.py "$OUT" 320 "$BASE" \
  --program=trade --alternate=5 --warm=2 --json="$OUT/trade-vs-$BASE.json"
uptime
