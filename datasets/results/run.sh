#!/bin/sh
# Re-record every result under datasets/results/ (run from the repository root; ~30-40 min on
# 2 cores). Each line is independent: re-run one dataset by copying its line.
set -e
selp bench iris --scales 20000,100000,300000 --patterns all -k 3 --engine local --repeat 1 --timeout 240 --memory-cap 6144 --out datasets/results/iris
selp bench explain --scales 20000,100000 --patterns all -k 3 --engine local --repeat 1 --timeout 240 --memory-cap 6144 --out datasets/results/explain
selp bench amie --scales 20000,100000 --patterns p5,p6,p7,p8,p9,p6s,p7s,p8s,p9s -k 3 --engine local --repeat 1 --timeout 240 --memory-cap 6144 --out datasets/results/amie
selp bench tc --scales 10000,30000 --patterns p10,p11,p12,p13 -k 3 --engine local --repeat 1 --timeout 240 --memory-cap 6144 --out datasets/results/tc
selp bench tc --scales 30000 --patterns p10 -k 1,3,7 --engine local,spark --modes semi-naive,top-k --repeat 1 --timeout 300 --memory-cap 6144 --out datasets/results/tc-k
# The k series at 100k-1M tuples (local top-k on TC needs ~1 s per 1 000 tuples here, so
# this is hours, not minutes, on a shared 2-core machine; run it when the engines are faster):
# selp bench tc --scales 100000,300000,1000000 --patterns p10 -k 1,3,7 --engine local,spark --repeat 3 --timeout 1800 --memory-cap 12288 --out datasets/results/tc-k-large
selp bench tc --scales 30000 --patterns p10 -k 1,3,7 --engine spark --modes semi-naive,top-k --repeat 1 --timeout 300 --memory-cap 6144 --out datasets/results/tc-k-spark
selp bench tc --scales 30000,100000 --patterns p10 -k 1,3,7 --engine spark --modes semi-naive,top-k --repeat 1 --timeout 600 --memory-cap 8192 --out datasets/results/tc-k-spark-prefilter
# issue 4's scale on Spark (about 15 min on 2 cores: top-7 alone takes about 8)
selp bench tc --scales 1000000 --patterns p10 -k 1,3,7 --engine spark --modes semi-naive,top-k --repeat 1 --warmup 0 --timeout 1800 --no-plots --out datasets/results/tc-k-spark-1m
# ProQL, chapter 8 (about 25 min)
selp bench proql --patterns chain:leaves --peers 10,25,50,100 --scales 20 --repeat 1 --warmup 0 --out datasets/results/proql/chain
selp bench proql --patterns chain:every,chain:leaves+middle,branched:leaves,tree:leaves --peers 10,50,100 --scales 20 --repeat 1 --warmup 0 --out datasets/results/proql/topologies
selp bench proql --patterns chain:leaves --peers 10,50,100 --scales 1000 --repeat 1 --warmup 0 --out datasets/results/proql/chain-1000
selp bench cdss --peers 5,10,20 --scales 500 --fractions 0.1,0.3,0.5 --fanout 1-3 --topology random --timeout 120 --engine embedded,reference --out datasets/results/cdss-embedded
# The paper's experiments at the paper's scale on the embedded engine (issue 17; about 75 min on 2
# cores, most of it full provenance running into its 3-minute cap)
selp bench iris --scales 1000000,3000000 --patterns all -k 3 --engine embedded --repeat 1 --warmup 0 --timeout 180 --memory-cap 8192 --out datasets/results/iris-embedded
selp bench explain --scales 1000000 --patterns all -k 3 --engine embedded --repeat 1 --warmup 0 --timeout 180 --memory-cap 8192 --out datasets/results/explain-embedded
selp bench amie --scales 1000000 --patterns p5,p6,p7,p8,p9,p6s,p7s,p8s,p9s -k 3 --engine embedded --repeat 1 --warmup 0 --timeout 180 --memory-cap 8192 --out datasets/results/amie-embedded
selp bench tc --scales 1000000 --patterns p10,p11,p12,p13 -k 3 --engine embedded --repeat 1 --warmup 0 --timeout 180 --memory-cap 8192 --out datasets/results/tc-embedded
selp bench tc --scales 1000000 --patterns p10 -k 1,3,7 --engine embedded --modes semi-naive,top-k --repeat 1 --warmup 0 --timeout 600 --memory-cap 8192 --out datasets/results/tc-k-embedded
