#!/bin/sh
# [LTZIL10] Fig. 16 again, on transit-stub networks with random latencies (1-100 ms per link,
# --latencies random), where the cheapest path is often not one of fewest hops: Multi AggSel
# (shortest-multi) against Single (shortest), monomial sets, DRed and recompute, 228 and 252
# directed links, 5 deletions. Then multi-aggsel/table.py's table.
# Usage, from this worktree: sh datasets/results/maintain/multi-aggsel-random/run.sh [OUT]
set -eu
tree=$(pwd)
OUT=${1:-$tree/datasets/results/maintain/multi-aggsel-random}
mkdir -p "$OUT"
for extra in ${EXTRAS:-1 2}; do
  uptime > "$OUT/uptime-extra$extra.txt"
  flock /work/bench.lock env PYTHONPATH="$tree" python3 -m selp bench maintain --workloads shortest,shortest-multi --latencies random \
    --strategies absorption-monomials,dred,recompute --stub-extra $extra --deletions 5 --no-orders --out "$OUT/extra$extra"
  uptime >> "$OUT/uptime-extra$extra.txt"
done
python3 "$tree/datasets/results/maintain/multi-aggsel/table.py" "$OUT"
