"""In-session A/B of the kernel loops (spark.selp.partitionLocal.kbestLoop): one warm local[2]
session, the loops alternating pass by pass. Usage: python ab_loop.py INPUT PASSES KS (e.g. 1000 8 0,1,3,7)."""
import sys, time, statistics
from pathlib import Path
from selp.bench import spark_ratios as sr
from selp.engines.spark_session import get_spark
source = sys.argv[1]; passes = int(sys.argv[2]); ks = [int(x) for x in sys.argv[3].split(",")]
spark = get_spark("local[2]", {"spark.driver.memory": "2g"})
work = Path(f"/tmp/abloop/work-{source.replace(':','_')}"); work.mkdir(parents=True, exist_ok=True)
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
loops = ["global", "recursive"]
res = {}
for p in range(passes + 2):
    for c in (loops if p % 2 == 0 else loops[::-1]):
        spark.conf.set("spark.selp.partitionLocal.kbestLoop", c)
        for k in ks:
            s = one(k)
            if p >= 2: res.setdefault((c, k), []).append(s)
    if p >= 2: print('pass', p, {f"{c}/{k}": round(v[-1], 2) for (c, k), v in res.items()}, flush=True)
for c in loops:
    med = {k: statistics.median(res[(c, k)]) for k in ks}
    print(c, {k: round(v, 3) for k, v in med.items()}, "top7/top1", round(med[7] / med[1], 3) if 7 in med and 1 in med else "", "top3/eval", round(med[3]/med[0], 3) if 3 in med and 0 in med else "")
