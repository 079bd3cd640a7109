#!/bin/bash
# selp bench adapt, 24-change mix, side by side in the same minutes: 7423b6f (the base of issue 24's
# a24f branch), then this tree.
# Usage: bench-vs-7423b6f.sh [REPEAT=2] [OUT=/tmp/adapt-vs-7423b6f] [ROWS=100000]   (run under flock /work/bench.lock)
set -e
here=$(cd "$(dirname "$0")/../../.." && pwd)
base=/tmp/base24f
if [ ! -d $base/selp ]; then
  mkdir -p $base && git -C "$here" archive 7423b6f | tar -x -C $base
  cp "$here"/selp/topk/_kernel*.so $base/selp/topk/
fi
out=${2:-/tmp/adapt-vs-7423b6f}
rows=${3:-100000}
uptime
for t in $base "$here"; do
  name=$([ "$t" = $base ] && echo base-7423b6f || echo this)
  start=$(date +%s)
  # cd into each tree: python3 -m puts the current directory before PYTHONPATH
  (cd "$t" && PYTHONPATH="$t" nice -n 5 python3 -m selp bench adapt --rows "$rows" --mix 24 --updates 0 --sweep "" \
      --no-kinds --repeat "${1:-2}" --out "$out/$name" 2>&1 | grep -v "^wrote")
  echo "$name: $(( $(date +%s) - start )) s"; uptime
done
