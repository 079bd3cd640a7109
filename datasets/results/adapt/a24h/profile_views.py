"""Profile the 24-change mix's views one by one (a24h): the old and new rules of each view, the
plan adaptation chose, and its times (search, execution) against recomputation.
Usage: PYTHONPATH=TREE python3 profile_views.py [ROWS=100000] [VIEWS=v2,v13,...]"""
import sys
import time

from selp.adapt.adapt import adapt, materialise, NEW
from selp.adapt.registry import z_engine
from selp.bench.adapt import _load, _clear
from selp.gen.mapping_changes import changed, initial, source_data
from selp.adapt.zprogram import to_text
from selp.language.parser import parse_program

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
show = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None
w = initial(0)
data = source_data(w, rows, 0)
e = z_engine("embedded")
_load(e, w, data)
new = changed(w, 24, 0, None)
p, p2 = parse_program(w.text()), parse_program(new.text())
rec = {}
for _ in range(2):
    _clear(e)
    for vp in adapt(e, p, p2, True, strategy="recompute"):
        rec[vp.relation] = min(rec.get(vp.relation, 9), vp.run_seconds)
best = {}
for _ in range(2):
    _clear(e)
    for vp in adapt(e, p, p2, True):
        if vp.relation not in best or vp.seconds < best[vp.relation].seconds:
            best[vp.relation] = vp
ratios = []
for name, vp in best.items():
    rel = name[:-len(NEW)]
    if rel not in new.views:
        continue
    ratio = max(vp.seconds, 0.01) / max(rec[name], 0.01)
    ratios.append(ratio)
    if show is not None and rel not in show:
        print(f"{rel}: ratio {ratio:.3f} adapt {vp.seconds*1e3:.1f} ms (search {vp.plan.seconds*1e3:.1f}, run {vp.run_seconds*1e3:.1f}) recompute {rec[name]*1e3:.1f} ms")
        continue
    print(f"== {rel}: ratio {ratio:.3f} adapt {vp.seconds*1e3:.1f} ms (search {vp.plan.seconds*1e3:.1f}, run {vp.run_seconds*1e3:.1f}, explored {vp.plan.explored}) recompute {rec[name]*1e3:.1f} ms; est {vp.plan.cost:.0f} vs {vp.plan.recompute_cost:.0f}")
    print("  old:", *(r.text() for r in w.views.get(rel, [])), sep="\n    ")
    print("  new:", *(r.text() for r in new.views[rel]), sep="\n    ")
    print("  plan:", *(f"{k:+d} {cq.key}" for cq, k in vp.plan.query.items()), sep="\n    ")
print(f"mean view ratio {sum(ratios)/len(ratios):.3f} over {len(ratios)}")
