#!/bin/sh
# [LTZIL10] Fig. 16 on selp: Multi AggSel (latency + hops, shortest-multi) against Single
# (latency only, shortest), per strategy, on the sparse (228 links) and denser (252 links)
# transit-stub networks; 5 deletions. Usage: sh run.sh OUT_DIR  (about 5 minutes quiet)
set -e
OUT=${1:-bench-out/multi-aggsel}
mkdir -p "$OUT"
for extra in 1 2; do
  uptime > "$OUT/uptime-extra$extra.txt"
  flock /work/bench.lock python3 -m selp bench maintain --workloads shortest,shortest-multi \
    --strategies absorption-monomials,absorption-bdd,dred,recompute --stub-extra $extra --deletions 5 --no-orders \
    --out "$OUT/extra$extra"
  uptime >> "$OUT/uptime-extra$extra.txt"
done
