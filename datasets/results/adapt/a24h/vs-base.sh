#!/bin/bash
# selp bench adapt side by side in the same minutes: the base commit's tree, then this tree
# (a24h's runs; the work is ../bench-vs-base.sh's).
# Usage (under flock /work/bench.lock):
#   vs-base.sh COMMIT [REPEAT=2] [OUT=/tmp/adapt-a24h-vs-COMMIT] [ROWS=100000] [EXPERIMENT=mix|kinds]
# mix:   --mix 24 --updates 0 --sweep "" --no-kinds   (the issue's target: provenance=True lines)
# kinds: --mix 24 --updates 0 --sweep "" --kinds      (also one change of each kind)
exec "$(dirname "$0")/../bench-vs-base.sh" "$1" "${2:-2}" "${3:-/tmp/adapt-a24h-vs-$1}" "${4:-100000}" "${5:-mix}"
