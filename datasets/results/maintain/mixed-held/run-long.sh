#!/bin/sh
# A longer mixed stream (30 rounds of delete + insert after 10 deletions) with this tree only:
# absorption-bdd (held edges) against DRed at 252 and 396 links, to see how often a deletion
# must expand held edges and whether that passes the node cap.
# Usage, from this worktree: sh datasets/results/maintain/mixed-held/run-long.sh [OUT]
set -eu
tree=$(pwd)
out=${1:-$tree/datasets/results/maintain/mixed-held/long}
mkdir -p "$out"
for x in ${EXTRAS:-2 8}; do
  flock /work/bench.lock sh -c '
    uptime > "$1/uptime-extra$3.txt"
    cd "$2" && PYTHONPATH="$2" python3 -m selp bench maintain --workloads reachable --stub-extra $3 --strategies absorption-bdd,dred --deletions 10 --mixed 30 --no-orders --out "$1/extra$3"
    uptime >> "$1/uptime-extra$3.txt"' sh "$out" "$tree" "$x"
done
