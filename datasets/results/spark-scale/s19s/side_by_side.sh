#!/usr/bin/env bash
# s19s: issue 19's top-k ratios, main (BASE) against this tree, side by side -- s19p's script
# (bench_topk.py, warm session, local[2], 1,000-node anchors graph, each leg under the benchmark
# lock, best of ROUNDS rounds, wall and whole-process-tree CPU seconds).
# Usage: BASE=/path/to/base/tree [ROUNDS=2] bash datasets/results/spark-scale/s19s/side_by_side.sh OUT_DIR
# A base tree from git: git -C /work/main archive fb1671d | (mkdir -p /tmp/base && tar -x -C /tmp/base)
# and its kernel: cp /work/main/selp/topk/_kernel.cpython-311-x86_64-linux-gnu.so /tmp/base/selp/topk/
set -euo pipefail
here=$(cd "$(dirname "$0")/../../../.." && pwd)
exec bash "$here/datasets/results/spark-scale/s19p/side_by_side.sh" "$@"
