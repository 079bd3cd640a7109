#!/usr/bin/env bash
# k17i: the kernel call's wall, CPU, system time and minor faults (n1000-k17g/phase.py) at k = 1
# and 7, BASE's tree and this one alternated, ROUNDS rounds; SELP_THREADS as in the environment.
# Run from the repository root: BASE=78d1f59 flock /work/bench.lock bash datasets/results/anchors/n1000-k17i/phase.sh
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
BASE=${BASE:-78d1f59}
ROUNDS=${ROUNDS:-5}
W=$(mktemp -d /tmp/selp-k17i-p-XXXX)
trap 'rm -rf "$W"' EXIT
INC=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")
SUF=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
mkdir -p "$W/base" "$W/branch"
git -C "$ROOT" archive "$BASE" | tar -x -C "$W/base"
git -C "$ROOT" ls-files -z selp | (cd "$ROOT" && xargs -0 tar -c) | tar -x -C "$W/branch"
for t in base branch; do
  gcc -O3 -fno-strict-aliasing -fwrapv -DNDEBUG -fPIC -shared -pthread -I"$INC" "$W/$t/selp/topk/_kernel.c" -o "$W/$t/selp/topk/_kernel$SUF"
done
PYTHONPATH="$W/branch" python3 -c "from selp.bench.anchors import generate_graph; from pathlib import Path; generate_graph(1000, Path('$W/g'), 1)"
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
