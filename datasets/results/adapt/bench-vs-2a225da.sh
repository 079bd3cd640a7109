#!/bin/bash
# selp bench adapt at 100k rows, 24-change mix, side by side: 2a225da, then this tree.
# Usage: bench-vs-2a225da.sh [REPEAT=3] [OUT=/tmp/adapt-vs-2a225da]   (run under flock /work/bench.lock)
set -e
here=$(cd "$(dirname "$0")/../../.." && pwd)
base=/tmp/base24
if [ ! -d $base/selp ]; then
  mkdir -p $base && git -C "$here" archive 2a225da | tar -x -C $base
  cp "$here"/selp/topk/_kernel*.so $base/selp/topk/
fi
out=${2:-/tmp/adapt-vs-2a225da}
uptime
for t in $base "$here"; do
  name=$([ "$t" = $base ] && echo base-2a225da || echo this)
  start=$(date +%s)
  # cd into each tree: python3 -m puts the current directory before PYTHONPATH
  (cd "$t" && PYTHONPATH="$t" nice -n 5 python3 -m selp bench adapt --rows 100000 --mix 24 --updates 0 --sweep "" \
      --no-kinds --repeat "${1:-3}" --out "$out/$name" 2>&1 | grep -v "^wrote")
  echo "$name: $(( $(date +%s) - start )) s"; uptime
done
