#!/usr/bin/env bash
# Issue 19's targets on TC at 1M output tuples (s19u): bench_topk.py on the TC benchmark graph
# (selp.gen.tc, 25 components of 200 nodes, 20,000 edge rows, 1,000,000 tc tuples; the input of
# datasets/results/tc-k-spark-1m), warm session, local[2]: Spark eval, top-1, top-3, top-7 of
# every fact, CPU seconds of the whole process tree, then the embedded engine's eval and top-k
# of the same input. With BASE (a tree with its compiled kernel, e.g. `git archive` of main),
# BASE's Spark lines are run first, under the same script.
# Usage, from this tree: [BASE=/path/to/base/tree] bash datasets/results/spark-scale/tc1m/rerun.sh OUT_DIR
# (each leg under the benchmark lock; ~5 minutes a leg on a quiet machine)
set -euo pipefail
out=${1:?OUT_DIR}
here=$(cd "$(dirname "$0")/../../../.." && pwd)
bench="$here/datasets/results/spark-scale/bench_topk.py"
mkdir -p "$out"
if [ -n "${BASE:-}" ]; then
  echo "base ($BASE), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  (cd "$BASE" && PYTHONPATH="$BASE" flock /work/bench.lock python3 "$bench" "$out/base" tc:1000000 base) \
    2> >(grep -v "^WARNING: Using incubator" >&2) | tee -a "$out/results.jsonl"
fi
echo "tree ($here), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
(cd "$here" && PYTHONPATH="$here" flock /work/bench.lock python3 "$bench" "$out/tree" tc:1000000 tree embedded) \
  2> >(grep -v "^WARNING: Using incubator" >&2) | tee -a "$out/results.jsonl"
python3 "$here/datasets/results/spark-scale/s19p/summary.py" "$out/results.jsonl"
