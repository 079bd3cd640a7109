"""A/B in one process, interleaved (a24i): the 24-change mix with provenance tables, each variant
recomputing and then adapting P′ in turn on the same DuckDB connection, so both strategies of a
variant run under its settings and a loaded minute shifts both variants alike. Variants:
``main`` — DuckDB's automatic checkpoint at its default threshold (16 MiB), as before a24i;
``a24i`` — no automatic checkpoint (the connection :class:`selp.adapt.zduck.DuckZ` opens).
An untimed ``CHECKPOINT`` precedes each variant's turn, so neither inherits the other's writes.
Every adapted relation is compared with the recomputation (counts included).
Usage: PYTHONPATH=TREE python3 ab.py [ROWS=100000] [ROUNDS=3] [VARIANT...]"""
import gc
import os
import statistics
import sys
import time

from selp.adapt.adapt import NEW, adapt
from selp.adapt.registry import z_engine
from selp.bench.adapt import EXPECTED, FLOOR_S, _clear, _load, _same
from selp.gen.mapping_changes import changed, initial, source_data
from selp.language.parser import parse_program

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
ALL = {"main": "16MiB", "a24i": "1TB"}  # checkpoint_threshold per variant
VARIANTS = {k: ALL[k] for k in sys.argv[3:]} if len(sys.argv) > 3 else ALL
print(f"rows {rows}, rounds {rounds}, load average {os.getloadavg()}", flush=True)
t0 = time.perf_counter()
w = initial(0)
e = z_engine("embedded")
_load(e, w, source_data(w, rows, 0))
print(f"loaded in {time.perf_counter() - t0:.1f} s", flush=True)
new = changed(w, 24, 0, None)
p, p2 = parse_program(w.text()), parse_program(new.text())
views = sorted({v + NEW for v in new.views}, key=lambda x: int(x[1:-len(NEW)]))
rec = {v: {} for v in VARIANTS}
best = {v: {} for v in VARIANTS}
fixed = {v: {} for v in VARIANTS}  # per view, of the fastest adaptation: (search s, other s)
expected = False
for r in range(rounds):
    for variant, threshold in VARIANTS.items():
        e.con.execute("CHECKPOINT")
        e.con.execute(f"SET checkpoint_threshold = '{threshold}'")
        _clear(e)
        gc.collect()
        for vp in adapt(e, p, p2, True, strategy="recompute"):
            rec[variant][vp.relation] = min(rec[variant].get(vp.relation, 99.0), vp.run_seconds)
        if not expected:
            for name in [n for n in e.names() if n.endswith(NEW)]:
                e.rename(name, name + EXPECTED)
            expected = True
        _clear(e)
        gc.collect()
        for vp in adapt(e, p, p2, True):
            if vp.relation in views and vp.seconds < best[variant].get(vp.relation, 99.0):
                best[variant][vp.relation] = vp.seconds
                fixed[variant][vp.relation] = (vp.plan.seconds, vp.seconds - vp.run_seconds - vp.plan.seconds)
            assert _same(e, vp.relation, vp.relation + EXPECTED), (variant, vp.relation)
    print(f"round {r + 1} done at {time.perf_counter() - t0:.0f} s, load {os.getloadavg()[0]:.1f}", flush=True)
for variant in VARIANTS:
    ratios = [max(best[variant][v], FLOOR_S) / max(rec[variant][v], FLOOR_S) for v in views]
    print(f"{variant:6s} mean view ratio {statistics.mean(ratios):.3f} (median {statistics.median(ratios):.3f}); "
          f"views adapt {sum(best[variant].values()):.3f} s / recompute {sum(rec[variant][v] for v in views):.3f} s; "
          f"all relations recompute {sum(rec[variant].values()):.3f} s; "
          f"search {sum(s for s, _ in fixed[variant].values()) * 1e3:.1f} ms, statistics and planning {sum(o for _, o in fixed[variant].values()) * 1e3:.1f} ms over the views")
print("view  " + "  ".join(f"{k:>24s}" for k in VARIANTS) + "   (recompute / adapt ms, ratio)")
for v in views:
    print(f"{v[:-len(NEW)]:5s} " + "  ".join(f"{rec[k][v]*1e3:8.1f} {best[k][v]*1e3:7.1f} {max(best[k][v], FLOOR_S) / max(rec[k][v], FLOOR_S):6.3f}" for k in VARIANTS))
print(f"load average at the end {os.getloadavg()}")
