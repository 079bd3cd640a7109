#!/usr/bin/env bash
# Issue 19's top-k ratios, side by side: bench_topk.py (warm session, local[2], 1,000-node
# anchors graph) for BASE and TREE in turn, ROUNDS times, each leg under the benchmark lock.
# Usage: BASE=/path/to/base/tree [TREE=/path/to/this/tree] [ROUNDS=2] [NODES=1000] \
#          bash datasets/results/spark-scale/s19t/side_by_side.sh OUT_DIR
# A tree needs its compiled kernel (selp/topk/_kernel*.so). Both legs run this tree's
# bench_topk.py, with the leg's tree first on PYTHONPATH; the script checks that Spark's
# workers import that tree's selp. Prints one JSON line per run to OUT_DIR/results.jsonl.
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
python3 - "$out/results.jsonl" <<'PY'
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1]) if '"run"' in l]
best = collections.defaultdict(dict)
for r in rows:
    leg = r["label"].split("-r")[0]
    best[leg][r["run"]] = min(best[leg].get(r["run"], 1e9), r["seconds"])
for leg, runs in best.items():
    ev, t1, t3, t7 = (runs.get(x) for x in ("eval", "topk k=1", "topk k=3", "topk k=7"))
    print(f"{leg}: best of rounds: eval {ev} s, top-1 {t1} s, top-3 {t3} s ({t3 / ev:.2f}x eval, target <= 2), "
          f"top-7 {t7} s ({t7 / t1:.2f}x top-1, target <= 1.25)")
PY
