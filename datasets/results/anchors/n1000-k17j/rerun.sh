#!/usr/bin/env bash
# Issue 17, k17j: the deciding benchmark, side by side with the commit this branch started from.
# Whole `selp eval` / `selp topk -k 1, 3, 7` processes on the anchors graph (N = 1,000), BASE
# (default fb1671d, main when k17j branched) against this tree, interleaved, medians and the
# targets' ratios (n1000-threads/interleaved.sh does the work; each tree's kernel is built from
# its own _kernel.c). Run from the repository root of this branch (or of main after the merge,
# with BASE set to the commit before it):
#   BASE=fb1671d ROUNDS=5 flock /work/bench.lock bash datasets/results/anchors/n1000-k17j/rerun.sh
# About 1-2 minutes on a quiet 2-core machine; SELP_THREADS=1 for the one-thread comparison.
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
BASE=${BASE:-fb1671d} ROUNDS=${ROUNDS:-5} exec bash "$ROOT/datasets/results/anchors/n1000-threads/interleaved.sh"
