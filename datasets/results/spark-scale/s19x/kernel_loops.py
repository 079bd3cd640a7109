"""The k-best loops of the compiled kernel on a random transitive closure (N nodes, 3N edges), whole
hypergraph (selp_topk), in process: run_kernel wall seconds per loop and k. Usage: python kernel_loops.py N REPS."""
import sys, time, statistics
import numpy as np
from selp.topk.kernel import Hypergraph, run_kernel, kbest_loop, kbest_counts

def tc_graph(n, m, seed=0):
    rng = np.random.default_rng(seed)
    e = np.unique(rng.integers(0, n, (m, 2)), axis=0)
    e = e[e[:, 0] != e[:, 1]]
    A = np.zeros((n, n), bool); A[e[:, 0], e[:, 1]] = True
    R = A.copy()
    while True:
        R2 = R | ((A.astype(np.int32) @ R.astype(np.int32)) > 0)
        if (R2 == R).all(): break
        R = R2
    E = len(e)
    ps, pt = np.nonzero(R)  # paths sorted by (s, t)
    P = len(ps)
    pid = -np.ones((n, n), np.int64); pid[ps, pt] = E + np.arange(P)
    # r1: path(a,b) :- edge(a,b)
    h1 = pid[e[:, 0], e[:, 1]]; k1 = np.arange(E)
    # r2: path(a,z) :- edge(a,b), path(b,z)
    start = np.searchsorted(ps, np.arange(n + 1))
    cnt = start[e[:, 1] + 1] - start[e[:, 1]]
    ei = np.repeat(np.arange(E), cnt)
    off = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    pj = start[e[ei, 1]] + off
    h2 = pid[e[ei, 0], pt[pj]]
    inst_head = np.concatenate([h1, h2])
    inst_rule = np.concatenate([np.zeros(E, np.int32), np.ones(len(h2), np.int32)])
    kids = np.concatenate([k1[:, None].repeat(2, 1)[:, :1].ravel(), np.stack([ei, E + pj], 1).ravel()])
    child_ptr = np.concatenate([[0], np.cumsum(np.concatenate([np.ones(E, np.int64), np.full(len(h2), 2)]))])
    F = E + P
    leaf = np.zeros(F, bool); leaf[:E] = True
    leaf_w = np.zeros(F); leaf_w[:E] = np.round(rng.uniform(0.05, 1.0, E), 3)
    return Hypergraph(leaf, leaf_w, rng.integers(-(2**63), 2**63 - 1, F), inst_rule, inst_head, child_ptr, kids.astype(np.int64),
                      np.array([0.9, 0.8]), np.array([1, 1]), np.array([101, 202]), np.array([False, False]))

n = int(sys.argv[1]); reps = int(sys.argv[2])
g = tc_graph(n, 3 * n)
print("facts", g.n_facts, "instances", len(g.inst_head))
res = {}
for r in range(reps):
    for loop, k in (("global", 1), ("global", 3), ("recursive", 3), ("global", 7), ("recursive", 7)):
        with kbest_loop(loop):
            t = time.perf_counter(); x = run_kernel(g, 0, -1.0, k, backend="compiled"); dt = time.perf_counter() - t
        res.setdefault((loop, k), []).append(dt)
        if r == 0 and k > 1:
            res.setdefault(("n", k), []).append(x.n_entries)
for key, v in res.items():
    print(key, "median %.3f" % statistics.median(v), " ".join("%.3f" % x for x in v))
print(kbest_counts())
