"""A/B in one process, interleaved (a24h): the 24-change mix with provenance tables, adapted
alternately by variants of this tree's search (``MAX_DIVE=0`` with a 3 % budget is main's
search), each with its own memo tables, against the same recomputation times; every adapted relation compared with the
recomputation. Loaded machines shift both variants alike, since their runs alternate.
Usage: PYTHONPATH=TREE python3 ab.py [ROWS=100000] [ROUNDS=3] [VARIANT...]"""
import statistics
import sys
import time

import selp.adapt.cost as C
import selp.adapt.rewrite as R
import selp.adapt.search as S
from selp.adapt.adapt import NEW, adapt
from selp.adapt.registry import z_engine
from selp.bench.adapt import EXPECTED, FLOOR_S, _clear, _load, _same
from selp.gen.mapping_changes import changed, initial, source_data
from selp.language.parser import parse_program

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
ALL = {"no dive (main)": {"MAX_DIVE": 0, "BUDGET_FRACTION": 0.03, "MIN_BUDGET": 0.001},
       "dive, 3 %": {"MAX_DIVE": 8, "BUDGET_FRACTION": 0.03, "MIN_BUDGET": 0.001},
       "dive, 1 % (a24h)": {"MAX_DIVE": 8, "BUDGET_FRACTION": 0.01, "MIN_BUDGET": 0.0003},
       "dive only": {"MAX_DIVE": 8, "BUDGET_FRACTION": 0.0, "MIN_BUDGET": 0.0}}
# [ROWS ROUNDS VARIANT...]: the variants to alternate (default: all four)
VARIANTS = {k: ALL[k] for k in sys.argv[3:]} if len(sys.argv) > 3 else ALL
# each variant keeps its own memo tables (fold pieces, CQ costs, executability), as its own
# process would: shared ones would let one variant's search warm the other's
MEMOS = {v: ({}, {}, {}) for v in VARIANTS}
w = initial(0)
e = z_engine("embedded")
_load(e, w, source_data(w, rows, 0))
new = changed(w, 24, 0, None)
p, p2 = parse_program(w.text()), parse_program(new.text())
views = {v + NEW for v in new.views}
rec: dict[str, float] = {}
best: dict[str, dict[str, float]] = {v: {} for v in VARIANTS}
cpu: dict[str, float] = {v: 0.0 for v in VARIANTS}
for r in range(rounds):
    _clear(e)
    for vp in adapt(e, p, p2, True, strategy="recompute"):
        rec[vp.relation] = min(rec.get(vp.relation, 9.0), vp.run_seconds)
    if r == 0:
        for name in rec:
            e.rename(name, name + EXPECTED)
    for variant, knobs in VARIANTS.items():
        for k, val in knobs.items():
            setattr(S, k, val)
        R._PIECES, R._EXECUTABLE, C._MEMO = MEMOS[variant]
        _clear(e)
        c0 = time.process_time()
        out = adapt(e, p, p2, True)
        cpu[variant] += time.process_time() - c0
        for vp in out:
            if vp.relation in views:
                best[variant][vp.relation] = min(best[variant].get(vp.relation, 9.0), vp.seconds)
            assert _same(e, vp.relation, vp.relation + EXPECTED), (variant, vp.relation)
for variant in VARIANTS:
    ratios = [max(best[variant][v], FLOOR_S) / max(rec[v], FLOOR_S) for v in sorted(views)]
    print(f"{variant:16s} mean view ratio {statistics.mean(ratios):.3f} (median {statistics.median(ratios):.3f}); "
          f"views adapt {sum(best[variant].values()):.3f} s / recompute {sum(rec[v] for v in views):.3f} s; "
          f"process CPU of all adaptations {cpu[variant]:.2f} s")
for v in sorted(views, key=lambda x: int(x[1:-4])):
    print(f"  {v[:-4]:4s} recompute {rec[v]*1e3:6.1f} ms  " + "  ".join(f"{best[k][v]*1e3:6.1f}" for k in VARIANTS))
