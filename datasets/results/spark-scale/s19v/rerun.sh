#!/usr/bin/env bash
# s19v: TC benchmark graph at 1M tuples (datasets/tc.dl, selp.gen.tc: 25 value components of 200
# nodes, 20,000 edge rows), Spark eval and top-1/3/7 of every fact, local[2], warm session, CPU of
# the whole process tree -- BASE (global rounds: the symmetry rule passes no position) and this
# tree (partition-local on value components), side by side, each leg under the benchmark lock.
# Usage, from this tree: BASE=/path/to/base/tree bash datasets/results/spark-scale/s19v/rerun.sh OUT_DIR
# BASE: a tree with its compiled kernel, e.g. `git archive s19u | tar -x -C DIR` plus
# selp/topk/_kernel*.so. The base legs take ~7 minutes on a quiet machine (split in two
# locked runs), this tree's ~1 minute.
set -euo pipefail
out=${1:?OUT_DIR}
here=$(cd "$(dirname "$0")/../../../.." && pwd)
bench="$here/datasets/results/spark-scale/bench_topk.py"
mkdir -p "$out"
leg() {  # leg TREE LABEL ARGS..
  local tree=$1 label=$2; shift 2
  echo "$label ($tree) $*, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  (cd "$tree" && PYTHONPATH="$tree" flock /work/bench.lock python3 "$bench" "$out/$label" tc:1000000 "$label" profile "$@") \
    2> >(grep -v "^WARNING: Using incubator" >&2) | tee -a "$out/results.jsonl"
}
leg "$here" tree
leg "${BASE:?BASE}" base k=1,3
leg "$BASE" base k=7
leg "$here" tree
python3 "$here/datasets/results/spark-scale/s19p/summary.py" "$out/results.jsonl"
