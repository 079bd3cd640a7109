#!/bin/sh
# The deciding comparisons of m23e (issue 23), on the transit-stub `reachable` view at 252 and
# 396 directed links, under one hold of the benchmark lock:
#  1. mixed-stream/: restriction on read (absorption-bdd) against the bulk restriction before
#     every insertion (absorption-bdd-bulk, 7423b6f's behaviour in the same code) and DRed:
#     10 deletions, then 10 rounds of (delete a random link, insert a new or re-inserted one);
#  2. shipping-bdd/: shipped rows and bytes per deletion, MinShip lazy with BDD formulas on 4
#     in-process nodes, against DRed's shipping under the same placement.
# The 396-link shipping run is capped at 4 minutes (its build by the nodes' semi-naive rounds
# may not end). Usage, from the worktree (about 8-10 minutes quiet):
#   sh datasets/results/maintain/m23e-run.sh [OUT]
set -eu
tree=$(pwd)
out=${1:?usage: sh datasets/results/maintain/m23e-run.sh OUT}
mkdir -p "$out/mixed-stream" "$out/shipping-bdd"
flock /work/bench.lock sh -c '
  cd "$2"
  for x in 2 8; do
    uptime > "$1/mixed-stream/uptime-extra$x.txt"
    PYTHONPATH="$2" python3 -m selp bench maintain --workloads reachable --stub-extra $x --strategies absorption-bdd,absorption-bdd-bulk,dred --deletions 10 --mixed 10 --no-orders --out "$1/mixed-stream/extra$x" -q
    uptime >> "$1/mixed-stream/uptime-extra$x.txt"
  done
  for x in 2 8; do
    uptime > "$1/shipping-bdd/uptime-extra$x.txt"
    PYTHONPATH="$2" timeout 240 python3 -m selp bench maintain --workloads reachable --stub-extra $x --strategies minship-lazy-bdd,dred-shipping --deletions 10 --no-orders --out "$1/shipping-bdd/extra$x" -q || echo "extra$x shipping: stopped (exit $?)"
    uptime >> "$1/shipping-bdd/uptime-extra$x.txt"
  done' sh "$out" "$tree"
cd "$tree" && PYTHONPATH="$tree" python3 "$tree/datasets/results/maintain/m23e-table.py" "$out"
