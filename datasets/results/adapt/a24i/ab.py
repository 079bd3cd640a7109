"""A/B in one process, interleaved (a24i): the 24-change mix with provenance tables, each variant
recomputing and then adapting P′ in turn on the same DuckDB connection, so both strategies of a
variant run under its settings and a loaded minute shifts both variants alike. Variants (each with its own memo tables, as its own process would have):
``main`` — as main (fb1671d): DuckDB's automatic checkpoint at its default threshold (16 MiB),
a kept old instance's remainder summed (``GROUP BY``) and costed so;
``checkpoint`` — main but no automatic checkpoint (the connection :class:`DuckZ` opens);
``a24i`` — this tree: no automatic checkpoint, remainders stored unsummed and costed so.
An untimed ``CHECKPOINT`` precedes each variant's turn, so neither inherits the other's writes.
Every adapted relation is compared with the recomputation (counts included).
Usage: PYTHONPATH=TREE python3 ab.py [ROWS=100000] [ROUNDS=3] [VARIANT...]
With AB_LOCK=PATH the data is generated and loaded first (untimed) and the lock PATH (e.g.
/work/bench.lock) taken only for the timed rounds (large ROWS: loading takes minutes)."""
import gc
import os
import statistics
import sys
import time

import selp.adapt.adapt as A
import selp.adapt.cost as C
import selp.adapt.rewrite as R
import selp.adapt.search as S
from selp.adapt.adapt import NEW, adapt
from selp.adapt.zduck import DuckZ
from selp.adapt.registry import z_engine
from selp.bench.adapt import EXPECTED, FLOOR_S, _clear, _load, _same
from selp.gen.mapping_changes import changed, initial, source_data
from selp.language.parser import parse_program

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3


def main_query_cost(q, stats, shared_copies=False):
    """main's (fb1671d) query_cost: a kept copy's remainder summed."""
    total, out = 0.0, 0.0
    for cq, k in q.items():
        if shared_copies and C.is_copy(cq, k):
            shared_copies = False
            total += C.RULE_OVERHEAD
            continue
        c, n = C.cq_cost(cq, stats)
        total += c + C.RULE_OVERHEAD
        out += n
    return total + out


A24I_QUERY_COST, A24I_DERIVATIONS = C.query_cost, DuckZ._derivations_sql
MAIN_DERIVATIONS = DuckZ._summed_sql  # main stored the remainder summed
# checkpoint_threshold, query_cost, how a remainder segment is written, per variant
ALL = {"main": ("16MiB", main_query_cost, MAIN_DERIVATIONS),
       "checkpoint": ("1TB", main_query_cost, MAIN_DERIVATIONS),
       "a24i": ("1TB", A24I_QUERY_COST, A24I_DERIVATIONS)}
VARIANTS = {k: ALL[k] for k in sys.argv[3:]} if len(sys.argv) > 3 else ALL
MEMOS = {v: ({}, {}, {}) for v in VARIANTS}
print(f"rows {rows}, rounds {rounds}, load average {os.getloadavg()}", flush=True)
t0 = time.perf_counter()
w = initial(0)
e = z_engine("embedded")
_load(e, w, source_data(w, rows, 0))
print(f"loaded in {time.perf_counter() - t0:.1f} s", flush=True)
if os.environ.get("AB_LOCK"):
    import fcntl

    lock = open(os.environ["AB_LOCK"], "a")
    fcntl.flock(lock, fcntl.LOCK_EX)  # held until the process ends
    t0 = time.perf_counter()
    print(f"lock taken, load average {os.getloadavg()}", flush=True)
new = changed(w, 24, 0, None)
p, p2 = parse_program(w.text()), parse_program(new.text())
views = sorted({v + NEW for v in new.views}, key=lambda x: int(x[1:-len(NEW)]))
rec = {v: {} for v in VARIANTS}
best = {v: {} for v in VARIANTS}
plans = {v: {} for v in VARIANTS}  # per view, the chosen plan (its CQs' keys)
fixed = {v: {} for v in VARIANTS}  # per view, of the fastest adaptation: (search s, other s)
expected = False
for r in range(rounds):
    for variant, (threshold, query_cost, derivations) in VARIANTS.items():
        A.query_cost = S.query_cost = query_cost
        DuckZ._derivations_sql = derivations
        R._PIECES, R._EXECUTABLE, C._MEMO = MEMOS[variant]
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
            if vp.relation in views:
                plans[variant][vp.relation] = sorted(f"{k:+d} {cq.key}" for cq, k in vp.plan.query.items())
            assert _same(e, vp.relation, vp.relation + EXPECTED), (variant, vp.relation)
    print(f"round {r + 1} done at {time.perf_counter() - t0:.0f} s, load {os.getloadavg()[0]:.1f}", flush=True)
for variant in VARIANTS:
    ratios = [max(best[variant][v], FLOOR_S) / max(rec[variant][v], FLOOR_S) for v in views]
    print(f"{variant:6s} mean view ratio {statistics.mean(ratios):.3f} (median {statistics.median(ratios):.3f}); "
          f"views adapt {sum(best[variant].values()):.3f} s / recompute {sum(rec[variant][v] for v in views):.3f} s; "
          f"all relations recompute {sum(rec[variant].values()):.3f} s; "
          f"search {sum(s for s, _ in fixed[variant].values()) * 1e3:.1f} ms, statistics and planning {sum(o for _, o in fixed[variant].values()) * 1e3:.1f} ms over the views")
last = list(VARIANTS)[-1]
print("view  " + "  ".join(f"{k:>24s}" for k in VARIANTS) + f"   (recompute / adapt ms, ratio; {last}'s search / other ms)")
for v in views:
    print(f"{v[:-len(NEW)]:5s} " + "  ".join(f"{rec[k][v]*1e3:8.1f} {best[k][v]*1e3:7.1f} {max(best[k][v], FLOOR_S) / max(rec[k][v], FLOOR_S):6.3f}" for k in VARIANTS)
          + f"   {fixed[last][v][0]*1e3:5.1f} {fixed[last][v][1]*1e3:5.1f}")
first = next(iter(VARIANTS))
for variant in list(VARIANTS)[1:]:
    for v in views:
        if plans[variant][v] != plans[first][v]:
            print(f"{v[:-len(NEW)]}: {variant}'s plan differs from {first}'s:", *plans[first][v], "  --", *plans[variant][v], sep="\n    ")
print(f"load average at the end {os.getloadavg()}")
