"""The v6 stall at 300k rows (a24h): the v6@new statement's SELECT alone (EXPLAIN ANALYZE, its first
execution) against its CREATE TABLE AS, inside the bench's sequence (recompute, adapt, twice); an optional
SQL statement (e.g. a DuckDB SET) is run first. Usage: PYTHONPATH=TREE python3 v6_stall.py ROWS ["SET ..."]"""
import sys, time, re
import selp.adapt.adapt as A
from selp.adapt.registry import z_engine
from selp.bench.adapt import _load, _clear
from selp.gen.mapping_changes import changed, initial, source_data
from selp.language.parser import parse_program
rows = int(sys.argv[1])
w = initial(0); e = z_engine("embedded"); _load(e, w, source_data(w, rows, 0))
new = changed(w, 24, 0, None)
p, p2 = parse_program(w.text()), parse_program(new.text())
print([r.text() for r in new.views["v6"]], [r.text() for r in w.views["v6"]])
raw = e.con
if len(sys.argv) > 2: raw.execute(sys.argv[2]); print("set:", sys.argv[2])
class Con:
    def execute(s, q, *a):
        if 'TABLE "v6@new' in q:
            sel = q.split(" AS ", 1)[1]
            t = time.perf_counter()
            out = raw.execute("EXPLAIN ANALYZE " + sel).fetchall()
            print(f"first run (EXPLAIN ANALYZE) {time.perf_counter()-t:.3f} s")
            print(out[0][1][:6000])
            t = time.perf_counter(); r = raw.execute(q, *a); print(f"then the CREATE {time.perf_counter()-t:.3f} s"); return r
        t = time.perf_counter(); r = raw.execute(q, *a); dt = time.perf_counter() - t
        if dt > 0.1: print(f"slow {dt:.3f} s: {q[:150]}")
        return r
    def __getattr__(s, n): return getattr(raw, n)
e.con = Con()
for i in range(2):
    _clear(e); A.adapt(e, p, p2, True, strategy="recompute")
    _clear(e); A.adapt(e, p, p2, True)
