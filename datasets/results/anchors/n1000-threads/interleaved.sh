#!/usr/bin/env bash
# Issue 17, top-k at the speed of evaluation: whole `selp eval` / `selp topk -k 1, 3, 7` processes on
# the anchors graph (N = 1,000, 873,168 path facts), base 7423b6f against this tree, interleaved
# (base then branch for each command, ROUNDS rounds), medians and the targets' ratios printed.
# The base is built from its own source (git archive + its kernel compiled from its _kernel.c).
# Run from the repository (the branch): bash datasets/results/anchors/n1000-threads/interleaved.sh
# About 2-3 minutes on a quiet 2-core machine. ROUNDS=5 by default; SELP_THREADS as in the
# environment (unset: every core).
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
BASE=${BASE:-7423b6f}
ROUNDS=${ROUNDS:-5}
W=$(mktemp -d /tmp/selp-k17-XXXX)
trap 'rm -rf "$W"' EXIT
INC=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")
build() { # tree -> its kernel built from its own source
  gcc -O3 -fno-strict-aliasing -fwrapv -DNDEBUG -fPIC -shared -pthread -I"$INC" "$1/selp/topk/_kernel.c" \
    -o "$1/selp/topk/_kernel$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")"
}
mkdir -p "$W/base" "$W/branch"
git -C "$ROOT" archive "$BASE" | tar -x -C "$W/base"
git -C "$ROOT" ls-files -z selp | (cd "$ROOT" && xargs -0 tar -c) | tar -x -C "$W/branch"
build "$W/base"; build "$W/branch"
PYTHONPATH="$W/branch" python3 -c "from selp.bench.anchors import generate_graph; from pathlib import Path; generate_graph(1000, Path('$W/g'), 1)"
cd "$W/g"
uptime
run() { # tree, name, args... -> wall seconds, CPU seconds (user + system) appended to $W/name.tree
  local tree=$1 name=$2; shift 2
  /usr/bin/time -f "%e %U %S" -o "$W/t" env PYTHONPATH="$W/$tree" python3 -m selp "$@" >/dev/null 2>"$W/err" || { cat "$W/err"; exit 1; }
  cat "$W/t" >> "$W/$name.$tree"
}
for r in $(seq "$ROUNDS"); do
  for tree in base branch; do
    run $tree eval eval tc.dl --db db --engine embedded -q
    for k in 1 3 7; do run $tree top$k topk tc.dl --db db -k $k --pattern 'path(*, *)' -q --format summary; done
  done
done
uptime
python3 - "$W" <<'PY'
import statistics, sys
w = sys.argv[1]
med = {}
for tree in ("base", "branch"):
    for name in ("eval", "top1", "top3", "top7"):
        rows = [[float(v) for v in line.split()] for line in open(f"{w}/{name}.{tree}") if line.strip()]
        xs = sorted(r[0] for r in rows)
        cpu = statistics.median(r[1] + r[2] for r in rows)
        med[tree, name] = statistics.median(xs)
        print(f"{tree:6} {name:5} median {med[tree, name]:.2f} s (CPU {cpu:.2f} s)  runs {' '.join(f'{x:.2f}' for x in xs)}")
for tree in ("base", "branch"):
    e, t1, t3, t7 = (med[tree, n] for n in ("eval", "top1", "top3", "top7"))
    print(f"{tree:6} top-1/eval {t1 / e:.2f}x (<= 2)  top-3/eval {t3 / e:.2f}x (<= 3)  top-7/top-1 {t7 / t1:.2f}x (<= 1.5)")
PY
