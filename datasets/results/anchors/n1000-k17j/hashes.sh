#!/usr/bin/env bash
# k17j: every fact's entries hashed (n1000-k17g/entries_hash.py), BASE's tree against this one,
# k = 1, 3, 7, on 1 and 2 threads (and 3 for this tree: the merge path). Run from the repository root:
#   BASE=fb1671d bash datasets/results/anchors/n1000-k17j/hashes.sh
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
BASE=${BASE:-fb1671d}
W=$(mktemp -d /tmp/selp-k17j-h-XXXX)
trap 'rm -rf "$W"' EXIT
source "$ROOT/datasets/results/anchors/n1000-k17i/trees.sh"
cd "$W/g"
for k in 1 3 7; do
  for th in 1 2 3; do
    for t in base branch; do
      [ "$th" = 3 ] && [ "$t" = base ] && continue
      echo "k=$k threads=$th $t $(SELP_THREADS=$th PYTHONPATH="$W/$t" python3 "$ROOT/datasets/results/anchors/n1000-k17g/entries_hash.py" \
        topk tc.dl --db db -k $k --pattern 'path(*, *)' -q --format summary 2>&1 >/dev/null | tail -1)"
    done
  done
done
