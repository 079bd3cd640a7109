"""Canonical hash of a static run's entries (k17g; k17i: sizes and rules
read as int64, whatever their dtype: k17i stores them as int32 and uint8), facts matched by value (DuckDB's fact ids
differ from run to run): per fact in value order its entry count, each entry's weight bits,
size, origin, rule, children (as canonical ids) and ranks -- for comparing two trees, or thread
counts, bit for bit. Usage, in the graph's directory:
  SELP_THREADS=2 PYTHONPATH=TREE python3 entries_hash.py topk tc.dl --db db -k 7 --pattern 'path(*, *)' -q --format summary"""
import sys, hashlib, runpy
import numpy as np
import selp.topk.decomposed as D
import selp.topk.embedded as E
got = {}
orig = D.run_static
def cap(*a, **kw):
    s = orig(*a, **kw); got['s'] = s; return s
D.run_static = cap
E.run_static = cap
orig_dt = E._to_dtable
def cap_dt(*a, **kw):
    d = orig_dt(*a, **kw); got['d'] = d; return d
E._to_dtable = cap_dt
sys.argv = ['selp'] + sys.argv[1:]
try:
    runpy.run_module('selp', run_name='__main__')
except SystemExit:
    pass
s = got['s']; res, g = s.result, s.graph
F = len(res.row)
dt = got['d']
keys = [None] * F
for rel, (first, n) in dt.meta.offsets.items():
    for i, v in enumerate(dt.values(rel)):
        keys[first + i] = (rel, tuple(map(str, v)))
order = np.array(sorted(range(F), key=lambda f: keys[f]), dtype=np.int64)  # canonical -> input id
canon = np.empty(F, np.int64); canon[order] = np.arange(F)
rows = res.row[order]
lo = res.fact_ptr[rows]; hi = res.fact_ptr[rows + 1]
cnt = hi - lo
ent = np.repeat(lo - np.concatenate(([0], np.cumsum(cnt)[:-1])), cnt) + np.arange(cnt.sum())  # entries in input order
h = hashlib.sha256()
h.update(cnt.astype(np.int64).tobytes())
h.update(res.w[ent].view(np.int64).tobytes()); h.update(res.size[ent].astype(np.int64).tobytes()); h.update(res.origin[ent].tobytes())
inst = res.inst[ent]
h.update(inst.__ge__(0).tobytes())
ii = np.where(inst >= 0, inst, 0)
h.update(np.where(inst >= 0, g.inst_rule[ii].astype(np.int64), -1).tobytes())
cp = g.child_ptr; m = cp[ii + 1] - cp[ii]
m = np.where(inst >= 0, m, 0)
sl = np.repeat(cp[ii] - np.concatenate(([0], np.cumsum(m)[:-1])), m) + np.arange(m.sum())
h.update(canon[g.child_fact[sl]].tobytes())
rp = res.child_rank_ptr
rk = np.repeat(rp[ent] - np.concatenate(([0], np.cumsum(m)[:-1])), m) + np.arange(m.sum())
h.update(res.child_rank[rk].astype(np.int64).tobytes())
print(f"entries {int(cnt.sum())} slots {int(m.sum())} sha {h.hexdigest()[:16]}", file=sys.stderr)
