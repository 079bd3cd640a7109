#!/usr/bin/env bash
# k17j: instruction and mispredicted-branch counts (callgrind's branch simulation) of the kernel's
# worker at top-7, one thread, BASE's tree and this one: deterministic, whatever the load (not a
# timing run). Run from the repository root: BASE=fb1671d bash datasets/results/anchors/n1000-k17j/callgrind.sh
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
BASE=${BASE:-fb1671d}
W=$(mktemp -d /tmp/selp-k17j-c-XXXX)
trap 'rm -rf "$W"' EXIT
source "$ROOT/datasets/results/anchors/n1000-k17i/trees.sh"
cd "$W/g"
PY=$(python3 -c "import sys; print(sys.executable)")
for t in base branch; do
  SELP_THREADS=1 PYTHONPATH="$W/$t" valgrind --tool=callgrind --branch-sim=yes --collect-atstart=no --toggle-collect=work \
    --callgrind-out-file="$W/cg.$t" "$PY" -m selp topk tc.dl --db db -k 7 --pattern 'path(*, *)' -q --format summary >/dev/null 2>"$W/err.$t"
  echo "$t: Ir Bc Bcm Bi Bim $(callgrind_annotate "$W/cg.$t" 2>/dev/null | grep 'PROGRAM TOTALS' | sed 's/([^)]*)//g;s/PROGRAM TOTALS//')"
done
