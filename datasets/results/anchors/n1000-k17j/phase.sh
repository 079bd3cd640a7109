#!/usr/bin/env bash
# k17j: the kernel call's wall, CPU, system time and minor faults (n1000-k17g/phase.py) at k = 1
# and 7, BASE's tree and this one alternated, ROUNDS rounds; SELP_THREADS as in the environment
# (phase_medians.py of k17i prints the medians). Run from the repository root:
#   BASE=fb1671d flock /work/bench.lock bash datasets/results/anchors/n1000-k17j/phase.sh
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
BASE=${BASE:-fb1671d}
ROUNDS=${ROUNDS:-5}
W=$(mktemp -d /tmp/selp-k17j-p-XXXX)
trap 'rm -rf "$W"' EXIT
source "$ROOT/datasets/results/anchors/n1000-k17i/trees.sh"
cd "$W/g"
uptime
for r in $(seq "$ROUNDS"); do
  for k in 1 7; do
    for t in base branch; do
      echo "k=$k $t $(PYTHONPATH="$W/$t" python3 "$ROOT/datasets/results/anchors/n1000-k17g/phase.py" \
        topk tc.dl --db db -k $k --pattern 'path(*, *)' -q --format summary 2>&1 >/dev/null | tail -1)"
    done
  done
done
uptime
