#!/bin/bash
# selp bench adapt, 24-change mix, side by side: 7423b6f (the base of branch a24f), then this tree.
# Usage: bench-vs-7423b6f.sh [REPEAT=2] [OUT=/tmp/adapt-vs-7423b6f] [ROWS=100000]   (run under flock /work/bench.lock)
exec "$(dirname "$0")/bench-vs-base.sh" 7423b6f "${1:-2}" "${2:-/tmp/adapt-vs-7423b6f}" "${3:-100000}"
