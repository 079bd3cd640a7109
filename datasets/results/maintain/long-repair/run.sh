#!/bin/sh
# Long mixed streams (10 deletions, then 30 rounds of delete + insert) on the transit-stub
# `reachable` view, BASE against this tree side by side, one locked run per density and tree:
# BASE's absorption-bdd (held edges expanded by deletions, m23g) and DRed, then this tree's
# absorption-bdd (a deletion repairs what it killed, m23h) and DRed.
# Usage, from this worktree: BASE=/work/main sh datasets/results/maintain/long-repair/run.sh [OUT]
# (EXTRAS="8 2" by default: 396 then 252 links; CODES="base tree" by default; each locked run
# ~1-3 min quiet)
set -eu
tree=$(pwd)
base=${BASE:-/work/main}
out=${1:-$tree/datasets/results/maintain/long-repair}
mkdir -p "$out"
for x in ${EXTRAS:-8 2}; do
  for code in ${CODES:-base tree}; do
    dir=$base; [ "$code" = tree ] && dir=$tree
    flock /work/bench.lock sh -c '
      uptime >> "$1/uptime-extra$3.txt"
      cd "$2" && PYTHONPATH="$2" python3 -m selp bench maintain --workloads reachable --stub-extra $3 --strategies absorption-bdd,dred --deletions 10 --mixed 30 --no-orders --out "$1/$4-extra$3"
      uptime >> "$1/uptime-extra$3.txt"' sh "$out" "$dir" "$x" "$code"
  done
done
python3 "$tree/datasets/results/maintain/long-repair/table.py" "$out"
