import sys, time, statistics, os
from pathlib import Path
from selp.engines.spark_session import *  # noqa
from selp.bench import spark_ratios as sr
from selp.topk import packed
source = sys.argv[1]; codecs = sys.argv[2].split(","); passes = int(sys.argv[3]); ks = [int(x) for x in sys.argv[4].split(",")]
from pyspark.sql import SparkSession
from selp.engines.spark_session import get_spark
spark = get_spark("local[2]", {"spark.driver.memory": "2g"})
work = Path(f"/tmp/codec/work-{source.replace(':','_')}"); work.mkdir(parents=True, exist_ok=True)
from selp.database import load_database
from selp.engines.spark import run_spark
from selp.language import parse_program_file
from selp.language.pattern_parser import parse_pattern
from selp.language.validate import analyze
from selp.topk.monoid import get_monoid
from selp.topk.spark import run_topk_spark
from selp.topk.task import make_task
kind, size = sr.parse_input(source)
program, db, rel = sr.prepare(kind, size, work)
analysis = analyze(parse_program_file(program)); types = load_database(analysis, db).types
pattern = parse_pattern(f"{rel}(*, *)")
def one(k):
    t = time.perf_counter()
    if k == 0:
        r = run_spark(analysis, db, spark); n = r.count(rel)
    else:
        r = run_topk_spark(make_task(analysis, types, get_monoid("confidence"), k, pattern, f"{rel}(*, *)"), db, spark); n = r.live_count
    r.close(); return time.perf_counter() - t
res = {}
for p in range(passes + 2):
    for c in codecs:
        spark.conf.set("spark.selp.partitionLocal.blobCodec", c)
        for k in ks:
            s = one(k)
            if p >= 2: res.setdefault((c, k), []).append(s)
    if p >= 2: print('pass', p, {f"{c}/{k}": round(v[-1], 2) for (c, k), v in res.items()}, flush=True)
for c in codecs:
    med = {k: statistics.median(res[(c, k)]) for k in ks}
    print(c, {k: round(v, 3) for k, v in med.items()}, "top7/top1", round(med[7] / med[1], 3) if 7 in med and 1 in med else "", "top3/eval", round(med[3]/med[0], 3) if 3 in med and 0 in med else "")
