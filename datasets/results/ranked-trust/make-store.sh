#!/bin/bash
# make-store.sh N DIR: the lead's generated CDSS with P5's ranked trust, initialised, imported and published
set -e
N=$1; D=$2
rm -rf $D
python3 -m selp gen cdss --peers 6 --base-size $N --fanout 1-2 --topology random --out $D >/dev/null
cat >> $D/cdss.toml <<'T'

[peers.P5.costs]
peers = { P0 = 1, P1 = 2, P2 = 3, P3 = 1, P4 = 2, P5 = 0 }
mappings = { m2_5 = 2 }
threshold = 4
T
python3 -m selp cdss init $D >/dev/null
for f in $D/data/*/*.csv; do
  peer=$(basename $(dirname $f)); rel=$(basename $f .csv)
  python3 -m selp cdss import $D --peer $peer --relation $rel $f >/dev/null
done
for p in $(ls $D/data); do python3 -m selp cdss publish $D --peer $p >/dev/null; done
