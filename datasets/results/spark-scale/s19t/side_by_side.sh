#!/usr/bin/env bash
# Issue 19's top-k ratios, side by side (s19t's command): now s19p's script, which also prints
# CPU seconds. Usage: BASE=/path/to/base/tree [TREE=...] [ROUNDS=2] [NODES=1000] \
#   bash datasets/results/spark-scale/s19t/side_by_side.sh OUT_DIR
exec bash "$(dirname "$0")/../s19p/side_by_side.sh" "$@"
