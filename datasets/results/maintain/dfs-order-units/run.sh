#!/bin/sh
# DFS vs random arrival order, BDD bytes per tuple, BASE (main before m23g) and this tree.
# Usage, from this worktree: BASE=/work/main sh datasets/results/maintain/dfs-order-units/run.sh
set -eu
tree=$(pwd)
base=${BASE:-/work/main}
for t in "$base" "$tree"; do
  echo "== $t ($(cd "$t" && git rev-parse --short HEAD))"
  (cd "$t" && PYTHONPATH="$t" python3 "$tree/datasets/results/maintain/dfs-order-units/order.py")
done
