#!/bin/bash
# Ranked trust at exchange, side by side: BASE (a tree without ranked_duck, e.g. /work/main: the
# embedded engine runs ranked_local there) against TREE (this branch: ranked_duck), interleaved.
#
#   BASE=/work/main SIZES="5000 30000" flock /work/bench.lock bash datasets/results/ranked-trust/run.sh
#
# Per size: the generated store (make-store.sh, kept under $WORK), then per repetition
# `selp cdss exchange --peer P5 --strategy recompute` under BASE and under TREE -- the line
# "ranked trust of P5: n import(s) above the threshold (..., Xs)" of each (n must be equal) --
# then TREE's bench.py: ranked_duck vs ranked_local in one process (CPU seconds too), and with
# SPARK=1 ranked_spark in a warm local[2] session.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TREE=${TREE:-$(cd "$HERE/../../.." && pwd)}
BASE=${BASE:?set BASE to the tree to compare with, e.g. /work/main}
SIZES=${SIZES:-"5000 30000"}
REPS=${REPS:-1}
WORK=${WORK:-/tmp/ranked-trust}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)  BASE=$BASE TREE=$TREE"
for N in $SIZES; do
  [ -d "$WORK/g$N/.selp" ] || PYTHONPATH=$TREE bash "$HERE/make-store.sh" "$N" "$WORK/g$N"
  for _ in $(seq "$REPS"); do
    for T in "$BASE" "$TREE"; do
      # run from the tree itself: `python -m` puts the working directory first on sys.path
      line=$(cd "$T" && PYTHONPATH=$T python3 -m selp cdss exchange "$WORK/g$N" --peer P5 --strategy recompute 2>&1 | grep "^ranked trust")
      echo "N=$N	$T	$line"
    done
  done
  extra=()
  [ -n "${SPARK:-}" ] && extra+=(--spark --warm "$WORK/g200")
  [ -n "${SPARK:-}" ] && { [ -d "$WORK/g200/.selp" ] || PYTHONPATH=$TREE bash "$HERE/make-store.sh" 200 "$WORK/g200"; }
  PYTHONPATH=$TREE python3 "$HERE/bench.py" "$WORK/g$N" --local "${extra[@]}"
done
echo "# end load: $(cut -d' ' -f1-3 /proc/loadavg)"
