#!/bin/sh
# [LTZIL10] Fig. 16 on selp: Multi AggSel (latency + hops, shortest-multi) against Single
# (latency only, shortest), per strategy, on transit-stub networks of 228 (sparse), 252 and 396
# (dense, the paper's) directed links; 5 deletions (3 at 396), one at a time. BDDs at 228 and 252
# only (extra8-bdd/ was run on its own). Then the table and multi-vs-single.png.
# Usage, from the repository root: sh datasets/results/maintain/multi-aggsel/run.sh OUT_DIR
# (about 9 minutes at load 7, less on a quiet machine)
set -e
OUT=${1:-bench-out/multi-aggsel}
mkdir -p "$OUT"
for extra in 1 2 8; do
  if [ $extra = 8 ]; then S=absorption-monomials,dred,recompute; N=3; else S=absorption-monomials,absorption-bdd,dred,recompute; N=5; fi
  uptime > "$OUT/uptime-extra$extra.txt"
  flock /work/bench.lock python3 -m selp bench maintain --workloads shortest,shortest-multi \
    --strategies $S --stub-extra $extra --deletions $N --no-orders --out "$OUT/extra$extra"
  uptime >> "$OUT/uptime-extra$extra.txt"
done
python3 "$(dirname "$0")/table.py" "$OUT"
