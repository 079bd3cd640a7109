#!/usr/bin/env bash
# The deciding side-by-side run of s19n (issue 19, item 3): BASE's selp (default deaa1b0, "today")
# against this tree's, on the 105,301-tuple nonlinear closure, both ways:
#   1. --alternate=5: each code's eval alone, the order swapped every repetition (medians);
#   2. the concurrent run of earlier rounds (both codes at once), for continuity.
# Usage, from the tree to measure: bash datasets/results/spark-nonlinear/s19n/rerun.sh [BASE] [OUT]
set -eu
BASE=${1:-deaa1b0}
OUT=${2:-/tmp/s19n-rerun}
cd "$(dirname "$0")/../../../.."
uptime
PYTHONPATH=. flock /work/bench.lock python3 datasets/results/spark-nonlinear/bench.py "$OUT" 340 "$BASE" --alternate=5
uptime
PYTHONPATH=. flock /work/bench.lock python3 datasets/results/spark-nonlinear/bench.py "$OUT" 340 "$BASE"
uptime
