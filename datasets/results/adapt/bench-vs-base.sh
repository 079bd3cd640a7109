#!/bin/bash
# selp bench adapt, 24-change mix, side by side in the same minutes: the base commit, then this tree.
# Usage: bench-vs-base.sh COMMIT [REPEAT=2] [OUT=/tmp/adapt-vs-COMMIT] [ROWS=100000] [EXPERIMENT=mix|kinds]
# (run under flock /work/bench.lock). mix: --no-kinds (the issue's target: the provenance=True
# lines); kinds: --kinds (also one change of each kind)
set -e
here=$(cd "$(dirname "$0")/../../.." && pwd)
commit=$1
base=/tmp/base-adapt-$commit
if [ ! -d $base/selp ]; then
  mkdir -p $base && git -C "$here" archive "$commit" | tar -x -C $base
  cp "$here"/selp/topk/_kernel*.so $base/selp/topk/
fi
out=${3:-/tmp/adapt-vs-$commit}
rows=${4:-100000}
kinds=$([ "${5:-mix}" = kinds ] && echo --kinds || echo --no-kinds)
uptime
for t in $base "$here"; do
  name=$([ "$t" = $base ] && echo "base-$commit" || echo this)
  start=$(date +%s)
  # cd into each tree: python3 -m puts the current directory before PYTHONPATH
  (cd "$t" && PYTHONPATH="$t" nice -n 5 python3 -m selp bench adapt --rows "$rows" --mix 24 --updates 0 --sweep "" \
      $kinds --repeat "${2:-2}" --out "$out/$name" 2>&1 | grep -v "^wrote")
  echo "$name: $(( $(date +%s) - start )) s"; uptime
done
