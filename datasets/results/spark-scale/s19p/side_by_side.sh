#!/usr/bin/env bash
# Issue 19's top-k ratios, side by side (s19p): bench_topk.py (warm session, local[2], 1,000-node
# anchors graph) for BASE and TREE in turn, ROUNDS times, each leg under the benchmark lock;
# prints the best of the rounds per tree, wall seconds and the CPU seconds of the whole process
# tree (driver, JVM, Python workers), with both ratios.
# Usage: BASE=/path/to/base/tree [TREE=/path/to/this/tree] [ROUNDS=2] [NODES=1000] \
#          bash datasets/results/spark-scale/s19p/side_by_side.sh OUT_DIR
# A tree needs its compiled kernel (selp/topk/_kernel*.so). Both legs run this tree's
# bench_topk.py with the leg's tree first on PYTHONPATH; bench_topk.py checks that Spark's
# workers import that tree's selp. One JSON line per run goes to OUT_DIR/results.jsonl.
set -euo pipefail
out=${1:?OUT_DIR}
here=$(cd "$(dirname "$0")/../../../.." && pwd)
tree=${TREE:-$here}
base=${BASE:?BASE: the base tree}
rounds=${ROUNDS:-2}
nodes=${NODES:-1000}
bench="$here/datasets/results/spark-scale/bench_topk.py"
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for leg in base tree; do
    t=$([ $leg = base ] && echo "$base" || echo "$tree")
    echo "round $r: $leg ($t), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    (cd "$t" && PYTHONPATH="$t" flock /work/bench.lock python3 "$bench" "$out/$leg" "$nodes" "$leg-r$r" profile) \
      2> >(grep -v "^WARNING: Using incubator" >&2) | tee -a "$out/results.jsonl"
  done
done
python3 "$here/datasets/results/spark-scale/s19p/summary.py" "$out/results.jsonl"
