"""Per view of the 24-change mix (with provenance tables), where DuckDB spends the time of each
strategy's statement (a24i): every ``CREATE TABLE ... AS SELECT`` of a view is run a second time
as ``EXPLAIN ANALYZE SELECT`` and the operators' times are summed by kind (aggregate, join,
scan, projection/filter), for the recomputation's and the adaptation's plan.
Usage: PYTHONPATH=TREE python3 sql_profile.py [ROWS=100000] [VIEWS=v0,v9,...]"""
import json
import re
import sys
import time

from selp.adapt.adapt import NEW, adapt
from selp.adapt.registry import z_engine
from selp.bench.adapt import _clear, _load
from selp.gen.mapping_changes import changed, initial, source_data
from selp.language.parser import parse_program

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
show = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None
w = initial(0)
e = z_engine("embedded")
_load(e, w, source_data(w, rows, 0))
new = changed(w, 24, 0, None)
p, p2 = parse_program(w.text()), parse_program(new.text())
raw = e.con
raw.execute("PRAGMA enable_profiling = 'json'")
raw.execute("PRAGMA profiling_mode = 'standard'")
raw.execute("PRAGMA disable_profiling")
views = {v for v in new.views if show is None or v in show}
prof: dict = {}
KIND = [("aggregate", re.compile("AGGREGATE|GROUP")), ("join", re.compile("JOIN")), ("scan", re.compile("SCAN")),
        ("write", re.compile("CREATE|INSERT"))]


def walk(node, acc):
    name = node.get("name") or node.get("operator_name") or ""
    t = float(node.get("timing", node.get("operator_timing", 0.0)))
    kind = next((k for k, rx in KIND if rx.search(name.upper())), "other")
    acc[kind] = acc.get(kind, 0.0) + t
    for c in node.get("children", []):
        walk(c, acc)


class Con:
    strategy = ""

    def execute(self, q, *a):
        m = re.match(r'CREATE OR REPLACE TABLE "(v\d+)@new[^"]*" AS (.*)$', q, re.S)
        if m and m.group(1) in views:
            t = time.perf_counter()
            r = raw.execute(q, *a)
            wall = time.perf_counter() - t
            raw.execute("PRAGMA enable_profiling = 'json'")
            raw.execute("SET profiling_output = '/tmp/a24i-sqlprof.json'")
            raw.execute(m.group(2)).fetchall()
            raw.execute("PRAGMA disable_profiling")
            doc = json.load(open("/tmp/a24i-sqlprof.json"))
            acc: dict = {}
            for c in doc.get("operator", doc.get("children", [])):
                walk(c, acc)
            acc["planning"] = float(doc.get("planner", {}).get("total_time", 0)) + float(doc.get("optimizer", {}).get("total_time", 0)) + float(doc.get("physical_planner", {}).get("total_time", 0))
            prof.setdefault(m.group(1), {}).setdefault(self.strategy, []).append((wall, acc, m.group(2)))
            return r
        return raw.execute(q, *a)

    def __getattr__(self, n):
        return getattr(raw, n)


con = Con()
e.con = con
for _ in range(2):
    for strategy in ("recompute", "adapt"):
        con.strategy = strategy
        _clear(e)
        adapt(e, p, p2, True, strategy=strategy)
for v in sorted(prof, key=lambda x: int(x[1:])):
    for strategy in ("recompute", "adapt"):
        runs = prof[v].get(strategy, [])
        if not runs:
            print(f"{v} {strategy}: no statement (shared by reference)")
            continue
        wall, acc, sql = min(runs, key=lambda x: x[0])
        parts = ", ".join(f"{k} {t*1e3:.1f}" for k, t in sorted(acc.items(), key=lambda x: -x[1]))
        print(f"{v} {strategy:9s}: CREATE {wall*1e3:6.1f} ms; operators (ms, summed over threads): {parts}")
    print(f"    adapt SQL: {min(prof[v].get('adapt', [(0, {}, '')]), key=lambda x: x[0])[2][:400]}")
