"""Issue 19's ratios measured in one warm session with repetitions (s19w): eval and top-k of
every fact (k = 1, 3, 7), ``local[2]``, driver 2g. After two untimed passes (the JVM's JIT
compilers were still busy ~20 s into a session: a sixth of the CPU in a perf sample), REPS
passes of [eval, top-1, top-3, top-7] in turn; prints the median and the minimum wall seconds
of each and the issue's two ratios of medians -- one pass per process (bench_topk.py) moved
top-1 by +-20 % between processes of the same tree.

Usage: ``PYTHONPATH=TREE python reps.py OUT_DIR INPUT REPS LABEL`` -- INPUT as bench_topk.py's
(NODES of the anchors graph, or ``tc:T``); OUT_DIR/work holds the generated input (reused when
present). Prints one JSON line with every pass's seconds."""
import json
import os
import statistics
import sys
import time
from pathlib import Path

out, source, reps, label = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
import selp  # noqa: E402
from selp.database import load_database  # noqa: E402
from selp.engines.spark import run_spark  # noqa: E402
from selp.engines.spark_session import get_spark  # noqa: E402
from selp.language import parse_program_file  # noqa: E402
from selp.language.pattern_parser import parse_pattern  # noqa: E402
from selp.language.validate import analyze  # noqa: E402
from selp.topk.monoid import get_monoid  # noqa: E402
from selp.topk.spark import run_topk_spark  # noqa: E402
from selp.topk.task import make_task  # noqa: E402

work = out / "work"
if source.startswith("tc:"):
    from selp.gen.tc import generate_tc_for
    if not (work / "db").exists():
        generate_tc_for(work / "db", int(source[3:]))
    program, rel = str(Path(__file__).resolve().parents[3] / "tc.dl"), "tc"
else:
    from selp.gen.anchors import generate_graph
    if not (work / "db").exists():
        generate_graph(int(source), work)
    program, rel = str(work / "tc.dl"), "path"
db = str(work / "db")
analysis = analyze(parse_program_file(program))
types = load_database(analysis, db).types
spark = get_spark("local[2]", {"spark.driver.memory": "2g"})
tree = os.path.dirname(os.path.dirname(os.path.abspath(selp.__file__)))
pattern = parse_pattern(f"{rel}(*, *)")


def one(k: int) -> float:
    t = time.perf_counter()
    if k == 0:
        r = run_spark(analysis, db, spark)
        r.count(rel)
    else:
        r = run_topk_spark(make_task(analysis, types, get_monoid("confidence"), k, pattern, f"{rel}(*, *)"), db, spark)
        r.live_count
    r.close()
    return time.perf_counter() - t


ks = (0, 1, 3, 7)
for _ in range(2):
    for k in ks:
        one(k)
runs: dict[int, list[float]] = {k: [] for k in ks}
for _ in range(reps):
    for k in ks:
        runs[k].append(round(one(k), 3))
spark.stop()
med = {k: statistics.median(v) for k, v in runs.items()}
names = {0: "eval", 1: "top-1", 3: "top-3", 7: "top-7"}
print(f"{label} ({tree}, {source}, {reps} passes, load {os.getloadavg()[0]:.1f}): "
      + ", ".join(f"{names[k]} {med[k]:.2f} (min {min(runs[k]):.2f})" for k in ks)
      + f"; top-3 / eval {med[3] / med[0]:.2f}x (<= 2), top-7 / top-1 {med[7] / med[1]:.2f}x (<= 1.25)", file=sys.stderr)
print(json.dumps({"label": label, "tree": tree, "input": source, "passes": {names[k]: v for k, v in runs.items()},
                  "median": {names[k]: v for k, v in med.items()}, "top3_over_eval": round(med[3] / med[0], 3),
                  "top7_over_top1": round(med[7] / med[1], 3), "load_end": os.getloadavg()}), flush=True)
