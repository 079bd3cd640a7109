#!/bin/sh
# Restriction on read (this tree) against the bulk restriction of 7423b6f (strategy
# absorption-bdd-bulk: the same code, every stale formula restricted before an insertion) and
# DRed, on the transit-stub `reachable` view at 252 and 396 directed links: 10 deletions one at
# a time, then a mixed stream of 10 rounds (delete a random link, insert a new or re-inserted one).
# Usage: sh datasets/results/maintain/mixed-stream/run.sh [OUT]   (from the worktree; ~8 min quiet)
set -eu
tree=$(pwd)
out=${1:-$tree/datasets/results/maintain/mixed-stream}
mkdir -p "$out"
flock /work/bench.lock sh -c '
  for x in 2 8; do
    uptime > "$1/uptime-extra$x.txt"
    cd "$2" && PYTHONPATH="$2" python3 -m selp bench maintain --workloads reachable --stub-extra $x --strategies absorption-bdd,absorption-bdd-bulk,dred --deletions 10 --mixed 10 --no-orders --out "$1/extra$x"
    uptime >> "$1/uptime-extra$x.txt"
  done' sh "$out" "$tree"
