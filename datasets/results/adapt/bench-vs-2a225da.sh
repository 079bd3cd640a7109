#!/bin/bash
# selp bench adapt at 100k rows, 24-change mix, side by side: 2a225da, then this tree.
# Usage: bench-vs-2a225da.sh [REPEAT=3] [OUT=/tmp/adapt-vs-2a225da]   (run under flock /work/bench.lock)
exec "$(dirname "$0")/bench-vs-base.sh" 2a225da "${1:-3}" "${2:-/tmp/adapt-vs-2a225da}"
