#!/usr/bin/env bash
# s19u: the small-graph regression of the global rounds (issue 19, item 3) and its fix,
# spark.selp.rounds.adaptive=auto (adaptive execution on for a round of a small component).
#   1. the N/4 graph (6,888 tuples) alone: BASE's selp against this tree's, each in its own warm
#      session, one eval at a time, alternating, 3 warm + 9 measured repetitions (s19r's method);
#      BASE = deaa1b0 ("today") or main (the code before this branch);
#   2. the 105,301-tuple closure and the N/4 graph, 2 warm + 5 measured: the target's ratio kept;
#   3. this tree alone, one warm session: auto against false (the setting before this branch),
#      alternating, per round seconds and jobs (s19r/round_jobs.py), both graphs.
# Usage, from this tree: bash datasets/results/spark-nonlinear/s19u/rerun.sh [BASE] [OUT]
# (about 8 minutes on a quiet machine; the benchmark lock is taken for each part).
set -eu
BASE=${1:-deaa1b0}
OUT=${2:-/tmp/s19u-rerun}
cd "$(dirname "$0")/../../../.."
mkdir -p "$OUT"
uptime
PYTHONPATH=. flock /work/bench.lock python3 datasets/results/spark-nonlinear/bench.py "$OUT" 340 "$BASE" \
  --alternate=9 --warm=3 --runs=small --json="$OUT/small-vs-$BASE.json"
uptime
PYTHONPATH=. flock /work/bench.lock python3 datasets/results/spark-nonlinear/bench.py "$OUT" 340 "$BASE" \
  --alternate=5 --warm=2 --json="$OUT/both-vs-$BASE.json"
uptime
AB_CONF=spark.selp.rounds.adaptive AB_VALUES=auto,false PYTHONPATH=. flock /work/bench.lock \
  python3 datasets/results/spark-nonlinear/s19r/round_jobs.py "$OUT" 5 | tee "$OUT/auto-vs-false.jsonl"
uptime
