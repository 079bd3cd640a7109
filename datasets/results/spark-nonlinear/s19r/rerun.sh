#!/usr/bin/env bash
# s19r's side-by-side of the nonlinear closure (issue 19, item 3): BASE's selp (a commit: deaa1b0 =
# "today", or main) against this tree's, each code in its own warm session, one eval at a time
# (alternating, the order swapped every repetition), warm-up repetitions discarded; wall and CPU
# seconds (driver + JVM), medians, min/max and per-repetition ratios; the load before every run.
#   1. the 105,301-tuple closure and the N/4 graph (6,888 tuples): 2 warm + 7 measured repetitions;
#   2. the N/4 graph alone: 3 warm + 9 measured repetitions (its runs are short and noisy).
# Usage, from the tree to measure: bash datasets/results/spark-nonlinear/s19r/rerun.sh [BASE] [OUT]
# (about 6 minutes at load 5; the benchmark lock is taken for each part).
set -eu
BASE=${1:-deaa1b0}
OUT=${2:-/tmp/s19r-rerun}
cd "$(dirname "$0")/../../../.."
mkdir -p "$OUT"
uptime
PYTHONPATH=. flock /work/bench.lock python3 datasets/results/spark-nonlinear/bench.py "$OUT" 340 "$BASE" \
  --alternate=7 --warm=2 --json="$OUT/both-vs-$BASE.json"
uptime
PYTHONPATH=. flock /work/bench.lock python3 datasets/results/spark-nonlinear/bench.py "$OUT" 340 "$BASE" \
  --alternate=9 --warm=3 --runs=small --json="$OUT/small-vs-$BASE.json"
uptime
