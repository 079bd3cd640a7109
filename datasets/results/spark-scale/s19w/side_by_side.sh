#!/usr/bin/env bash
# s19w: reps.py for BASE and this tree in turn, ROUNDS times each, each leg under the benchmark
# lock; one JSON line per leg to OUT_DIR/results.jsonl, the summary lines on stderr.
# Usage: BASE=/path/to/base/tree [ROUNDS=2] [REPS=5] [INPUT=1000] bash datasets/results/spark-scale/s19w/side_by_side.sh OUT_DIR
# A base tree from git, with its own kernel: git -C /work/main archive REV | (mkdir -p /tmp/base && tar -x -C /tmp/base);
# (cd /tmp/base && python3 setup.py build_ext --inplace)
set -euo pipefail
out=${1:?OUT_DIR}
here=$(cd "$(dirname "$0")/../../../.." && pwd)
base=${BASE:?BASE: the base tree}
rounds=${ROUNDS:-2}; reps=${REPS:-5}; input=${INPUT:-1000}
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for leg in base tree; do
    t=$([ $leg = base ] && echo "$base" || echo "$here")
    (cd "$t" && PYTHONPATH="$t" flock /work/bench.lock python3 "$here/datasets/results/spark-scale/s19w/reps.py" "$out/work-$input" "$input" "$reps" "$leg-r$r") \
      2> >(grep -v "^WARNING: Using incubator" >&2) >> "$out/results.jsonl"
  done
done
