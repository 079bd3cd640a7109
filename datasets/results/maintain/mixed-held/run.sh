#!/bin/sh
# Mixed streams with absorbed new edges held unexpanded (m23g) against BASE (main before it),
# side by side: per density (252 and 396 directed links of the transit-stub `reachable` view),
# BASE's absorption-bdd and DRed, then this tree's absorption-bdd (held edges),
# absorption-bdd-expand (the same code expanding every new edge: BASE's behaviour) and DRed;
# 10 deletions one at a time, then 10 rounds of delete + insert, the held edges expanded at the
# end (row fold-held: the deferred work, paid at once).
# Usage, from this worktree: BASE=/work/main sh datasets/results/maintain/mixed-held/run.sh [OUT]
# (~10 min quiet; takes the bench lock per density)
set -eu
tree=$(pwd)
base=${BASE:-/work/main}
out=${1:-$tree/datasets/results/maintain/mixed-held}
mkdir -p "$out"
for x in ${EXTRAS:-2 8}; do
  flock /work/bench.lock sh -c '
    uptime > "$1/uptime-extra$4.txt"
    cd "$3" && PYTHONPATH="$3" python3 -m selp bench maintain --workloads reachable --stub-extra $4 --strategies absorption-bdd,dred --deletions 10 --mixed 10 --no-orders --out "$1/base-extra$4"
    uptime >> "$1/uptime-extra$4.txt"
    cd "$2" && PYTHONPATH="$2" python3 -m selp bench maintain --workloads reachable --stub-extra $4 --strategies absorption-bdd,absorption-bdd-expand,dred --deletions 10 --mixed 10 --no-orders --out "$1/extra$4"
    uptime >> "$1/uptime-extra$4.txt"' sh "$out" "$tree" "$base" "$x"
done
python3 "$tree/datasets/results/maintain/long-repair/table.py" "$out" m23g extra "2 8"
