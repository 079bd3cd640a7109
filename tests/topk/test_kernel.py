"""The compiled top-k kernel (selp.topk.kernel): both paths agree bit for bit, and the answers are
right against independent computations.

* compiled == pure Python on random hypergraphs (cyclic or not, repeated children, instances
  without children, copy rules, every combine code and both signs, k in 1..5), plus structural
  invariants of every result;
* brute force on small acyclic hypergraphs: every tree of every fact, deduplicated by origin,
  sorted by (key, size, origin), cut to k. For strictly monotone monoids (product with weights in
  (0, 1], sum with positive weights; values chosen so that float arithmetic is exact) the
  kernel's weights and sizes equal the brute force's;
* the seen-set reference (every modification of a popped vector, repeats dropped by a set, as
  in ``selp.topk.local._Run.heuristic``) gives the same weights and sizes as the kernel's
  one-parent enumeration, on cyclic hypergraphs too; and the one-parent rule reaches every rank
  vector exactly once;
* transitive closure: top-1 equals Dijkstra's best path products, top-k equals the k best walks,
  and both equal the local engine's DTable.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import math
import subprocess
import sys
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from helpers.budget import examples
from selp.topk.kernel import (
    Hypergraph, KernelResult, compiled_available, kbest_counts, kbest_loop, modifications, origin_of, origin_of_compiled, run_kernel, spark_origin_of,
)

INT64 = st.integers(-(2**63), 2**63 - 1)
FIELDS = ("fact_ptr", "w", "size", "origin", "inst", "child_rank_ptr", "child_rank")
SLOW = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])

# monotone (combine, sign, weights) settings where the algorithm is exact; weights are dyadic
# (product) or small integers (sum) so float arithmetic is exact and ties are frequent
PRODUCT_W = (0.5, 0.25, 0.75, 0.125, 0.875, 0.625, 1.0)
SUM_W = (1.0, 2.0, 3.0, 5.0)


# --- origins ---------------------------------------------------------------------------------------


def test_origin_of_is_pinned() -> None:
    """The mixing is part of the format (origins are stored): changing it must be deliberate."""
    assert origin_of(7, [-1, 2**63 - 1]) == 6960621880875391777
    assert origin_of(0, []) == -2152535657050944081
    # splitmix64's finaliser maps 0 to 0: the final step keeps these apart
    assert len({origin_of(0, []), origin_of(0, [0]), origin_of(0, [0, 0]), 0}) == 4
    assert origin_of(1, [2, 3]) != origin_of(1, [3, 2])


@given(INT64, st.lists(INT64, max_size=6))
@settings(max_examples=examples(300), deadline=None)
def test_origin_of_matches_compiled(rule_hash: int, children: list[int]) -> None:
    from selp.topk.kernel import origin_of_compiled

    got = origin_of_compiled(rule_hash, np.array(children, dtype=np.int64))
    assert int(got) == origin_of(rule_hash, children)
    assert -(2**63) <= origin_of(rule_hash, children) < 2**63


# --- random hypergraphs ----------------------------------------------------------------------------


@st.composite
def hypergraphs(draw, acyclic: bool, weights: tuple[float, ...] | None, identity: float | None,
                max_facts: int = 9, max_inst: int = 16, max_arity: int = 3) -> Hypergraph:
    """A random hypergraph. Facts are laid out in a hidden order (leaves first) and numbered by a
    random permutation; ``acyclic``: children come before the head in that order. ``weights``:
    drawn from these values (None: any float, many ties). ``identity``: the weight of copy rules
    (None: any). With ``identity`` given, leaf origins and rule hashes are distinct (but for
    annotated variants of a rule, which share its hash, weight and size), so that one origin is
    one tree of P and has one weight and size, as in selp; otherwise they may repeat."""
    n_leaf = draw(st.integers(0, 4))
    n_idb = draw(st.integers(1, max_facts - 4))
    F = n_leaf + n_idb
    perm = draw(st.permutations(range(F)))  # position -> fact id
    R = draw(st.integers(1, 4))
    hashes = iter(draw(st.lists(INT64, min_size=n_leaf + R, max_size=n_leaf + R, unique=identity is not None)))

    def weight() -> float:
        if weights is not None:
            return draw(st.sampled_from(weights))
        return draw(st.one_of(st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0]),
                              st.floats(-4, 4, allow_nan=False, allow_infinity=False)))

    rule_w, rule_size, rule_hash, rule_copy = [], [], [], []
    for r in range(R):
        plain = [j for j in range(r) if not rule_copy[j]]
        if plain and draw(st.integers(0, 4)) == 0:  # an annotated variant of an earlier rule
            j = draw(st.sampled_from(plain))
            rule_w.append(rule_w[j]), rule_size.append(1), rule_hash.append(rule_hash[j]), rule_copy.append(False)
            continue
        copy = draw(st.integers(0, 3)) == 0
        rule_copy.append(copy)
        rule_size.append(0 if copy else 1)
        rule_hash.append(next(hashes))
        rule_w.append(identity if copy and identity is not None else weight())
    I = draw(st.integers(0, max_inst))
    inst_rule, inst_head, kids = [], [], []
    for _ in range(I):
        r = draw(st.integers(0, R - 1))
        head = draw(st.integers(n_leaf, F - 1))  # a position
        pool = head if acyclic else F
        arity = 1 if rule_copy[r] else draw(st.integers(0, max_arity))
        if pool == 0 and arity > 0:
            continue
        inst_rule.append(r)
        inst_head.append(perm[head])
        kids.append([perm[draw(st.integers(0, pool - 1))] for _ in range(arity)])
    leaf = np.zeros(F, bool)
    leaf_w = np.zeros(F)
    leaf_origin = np.zeros(F, np.int64)
    for pos in range(n_leaf):
        leaf[perm[pos]] = True
        leaf_w[perm[pos]] = weight()
        leaf_origin[perm[pos]] = next(hashes)
    child_ptr = np.zeros(len(kids) + 1, np.int64)
    child_ptr[1:] = np.cumsum([len(c) for c in kids])
    return Hypergraph(
        leaf, leaf_w, leaf_origin, np.array(inst_rule, np.int32), np.array(inst_head, np.int64), child_ptr,
        np.array([f for c in kids for f in c], np.int64), np.array(rule_w, np.float64),
        np.array(rule_size, np.int64), np.array(rule_hash, np.int64), np.array(rule_copy, bool),
    )


MONOTONE = [(0, -1.0, PRODUCT_W, 1.0), (1, 1.0, SUM_W, 0.0)]


def _global(g: Hypergraph, combine: int, sign: float, k: int) -> KernelResult:
    """The compiled kernel with the pure-Python twin's loop (the global one), whose arrays the
    twin must give bit for bit; the recursive enumeration is compared on what it must give
    alike (the weights and sizes of every fact's entries, see below)."""
    with kbest_loop("global"):
        return run_kernel(g, combine, sign, k, backend="compiled")


def _same(a: KernelResult, b: KernelResult) -> None:
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        assert x.tobytes() == y.tobytes(), name  # bit for bit (signed zeros too)


def _check_invariants(g: Hypergraph, res: KernelResult, combine: int, sign: float, k: int) -> None:
    """Every entry is what its instance and children's entries make; origins are distinct per
    fact; at most k entries; leaves are their one leaf entry."""
    comb = [lambda a, b: a * b, lambda a, b: a + b, lambda a, b: b if b < a else a][combine]
    fp = res.fact_ptr
    assert fp[0] == 0 and np.all(np.diff(fp) >= 0) and np.all(np.diff(fp) <= k)
    for f in range(g.n_facts):
        ents = range(fp[f], fp[f + 1])
        assert len({int(res.origin[e]) for e in ents}) == len(ents)
        if g.leaf[f]:
            assert len(ents) == 1 and res.inst[fp[f]] == -1
            assert res.w[fp[f]] == g.leaf_w[f] and res.origin[fp[f]] == g.leaf_origin[f] and res.size[fp[f]] == 0
        for e in ents:
            i = int(res.inst[e])
            ranks = res.child_rank[res.child_rank_ptr[e]:res.child_rank_ptr[e + 1]]
            if i < 0:
                assert g.leaf[f] and len(ranks) == 0
                continue
            assert g.inst_head[i] == f
            kids = g.child_fact[g.child_ptr[i]:g.child_ptr[i + 1]]
            assert len(ranks) == len(kids)
            r = g.inst_rule[i]
            w, size, origins = float(g.rule_w[r]), int(g.rule_size[r]), []
            for c, rank in zip(kids, ranks):
                assert 1 <= rank <= fp[c + 1] - fp[c]
                ce = fp[c] + rank - 1
                w = comb(w, float(res.w[ce]))
                size += int(res.size[ce])
                origins.append(int(res.origin[ce]))
            assert res.w[e] == w and res.size[e] == size
            assert res.origin[e] == (origins[0] if g.rule_copy[r] else origin_of(int(g.rule_hash[r]), origins))


@given(st.data(), st.booleans(), st.integers(0, 2), st.sampled_from([1.0, -1.0]), st.integers(1, 5))
@SLOW
def test_compiled_equals_python(data, acyclic: bool, combine: int, sign: float, k: int) -> None:
    g = data.draw(hypergraphs(acyclic, None, None))
    a = run_kernel(g, combine, sign, k, backend="python")
    b = _global(g, combine, sign, k)
    _same(a, b)
    _check_invariants(g, a, combine, sign, k)


@given(st.data(), st.booleans(), st.sampled_from(MONOTONE), st.integers(1, 5))
@SLOW
def test_compiled_equals_python_monotone(data, acyclic: bool, monoid, k: int) -> None:
    """Same, with the ties of a real monoid (dyadic or integer weights), and sorted output."""
    combine, sign, weights, identity = monoid
    g = data.draw(hypergraphs(acyclic, weights, identity, max_facts=12, max_inst=30))
    a = run_kernel(g, combine, sign, k, backend="python")
    _same(a, _global(g, combine, sign, k))
    _check_invariants(g, a, combine, sign, k)
    for f in range(g.n_facts):  # best first, by (weight, size)
        keys = [(sign * a.w[e], a.size[e]) for e in range(a.fact_ptr[f], a.fact_ptr[f + 1])]
        assert keys == sorted(keys)


def _copies(g: Hypergraph, n: int, rng: np.random.Generator) -> tuple[Hypergraph, np.ndarray, np.ndarray]:
    """``n`` copies of ``g`` sharing its leaves, their non-leaf facts and instances interleaved
    at random, each copy's in its own order (ties between equal keys are broken by these ids,
    and the compiled kernel keeps a component's relative order): (the union, new id of (copy,
    fact), new id of (copy, instance))."""
    F, I = g.n_facts, g.n_instances
    leaves = np.flatnonzero(g.leaf)
    inner = np.flatnonzero(~g.leaf)

    def interleave(m: int, items: int) -> np.ndarray:
        # sorted random keys per copy: an increasing map for each, the copies mixed
        keys = np.concatenate([np.sort(rng.random(items)) for _ in range(m)])
        return np.argsort(np.argsort(keys, kind="stable"), kind="stable").reshape(m, items)

    total = len(leaves) + n * len(inner)
    fid = np.empty((n, F), np.int64)
    fid[:, leaves] = np.arange(len(leaves))  # leaves are never compared with other facts
    fid[:, inner] = len(leaves) + interleave(n, len(inner))
    iid = interleave(n, I)
    leaf = np.zeros(total, bool)
    leaf_w, leaf_origin = np.zeros(total), np.zeros(total, np.int64)
    leaf[fid[0, leaves]] = True
    leaf_w[fid[0, leaves]] = g.leaf_w[leaves]
    leaf_origin[fid[0, leaves]] = g.leaf_origin[leaves]
    inst_rule, inst_head = np.zeros(n * I, np.int32), np.zeros(n * I, np.int64)
    kids: list[list[int]] = [[] for _ in range(n * I)]
    for c in range(n):
        for i in range(I):
            inst_rule[iid[c, i]] = g.inst_rule[i]
            inst_head[iid[c, i]] = fid[c, g.inst_head[i]]
            kids[iid[c, i]] = [int(fid[c, x]) for x in g.child_fact[g.child_ptr[i]:g.child_ptr[i + 1]]]
    ptr = np.zeros(n * I + 1, np.int64)
    np.cumsum([len(x) for x in kids], out=ptr[1:])
    u = Hypergraph(leaf, leaf_w, leaf_origin, inst_rule, inst_head, ptr,
                   np.array([x for ks in kids for x in ks], np.int64), g.rule_w, g.rule_size, g.rule_hash, g.rule_copy)
    return u, fid, iid


@given(st.data(), st.booleans(), st.integers(0, 2), st.sampled_from([1.0, -1.0]), st.integers(1, 4), st.integers(2, 4))
@SLOW
def test_independent_components_get_the_answers_they_have_alone(data, acyclic: bool, combine: int, sign: float,
                                                                k: int, n: int) -> None:
    """The compiled kernel runs component after component (facts linked through instances,
    leaves shared); the pure-Python twin runs one global loop. On copies of a hypergraph whose
    facts and instances are shuffled together, with ties (any weights, repeated origins), both
    give every copy exactly the entries the hypergraph has alone."""
    g = data.draw(hypergraphs(acyclic, None, None))
    u, fid, iid = _copies(g, n, np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))))
    alone = run_kernel(g, combine, sign, k, backend="python")
    both = run_kernel(u, combine, sign, k, backend="python")
    _same(both, _global(u, combine, sign, k))
    for c in range(n):
        for f in range(g.n_facts):
            a = range(alone.fact_ptr[f], alone.fact_ptr[f + 1])
            b = range(both.fact_ptr[fid[c, f]], both.fact_ptr[fid[c, f] + 1])
            assert len(a) == len(b)
            for ea, eb in zip(a, b):
                assert (alone.w[ea], alone.size[ea], alone.origin[ea]) == (both.w[eb], both.size[eb], both.origin[eb])
                assert alone.inst[ea] == -1 == both.inst[eb] or iid[c, alone.inst[ea]] == both.inst[eb]
                ra = alone.child_rank[alone.child_rank_ptr[ea]:alone.child_rank_ptr[ea + 1]]
                rb = both.child_rank[both.child_rank_ptr[eb]:both.child_rank_ptr[eb + 1]]
                assert ra.tolist() == rb.tolist()
@given(st.data(), st.booleans(), st.integers(0, 2), st.sampled_from([1.0, -1.0]), st.integers(1, 4))
@SLOW
def test_spark_origins_and_leaf_sizes_compiled_equals_python(data, acyclic: bool, combine: int, sign: float, k: int) -> None:
    """Origin mode 1 (Spark's xxhash64 chain) and leaves standing for entries of any size: both
    kernels agree bit for bit, and every entry is its instance over its children's entries."""
    g = data.draw(hypergraphs(acyclic, None, None))
    g.leaf_size = np.array(data.draw(st.lists(st.integers(0, 5), min_size=g.n_facts, max_size=g.n_facts)), np.int64)
    g.origin_mode = 1
    a = run_kernel(g, combine, sign, k, backend="python")
    _same(a, _global(g, combine, sign, k))
    fp = a.fact_ptr
    for f in np.flatnonzero(g.leaf):
        assert a.size[fp[f]] == g.leaf_size[f]
    for e in np.flatnonzero(a.inst >= 0):
        i = int(a.inst[e])
        r = g.inst_rule[i]
        kids = g.child_fact[g.child_ptr[i]:g.child_ptr[i + 1]]
        ranks = a.child_rank[a.child_rank_ptr[e]:a.child_rank_ptr[e + 1]]
        got = [int(a.origin[fp[c] + rank - 1]) for c, rank in zip(kids, ranks)]
        assert a.origin[e] == (got[0] if g.rule_copy[r] else spark_origin_of(int(g.rule_hash[r]), got))
        assert a.size[e] == g.rule_size[r] + sum(int(a.size[fp[c] + rank - 1]) for c, rank in zip(kids, ranks))


def test_spark_origin_is_sparks_xxhash64(spark) -> None:
    """Origin mode 1 is what Spark's own xxhash64("N", rule, child origins..) computes."""
    from pyspark.sql import functions as F

    kids = [0, 123, -987654321012345, 2**63 - 1, -(2**63)]
    row = spark.range(1).select(
        F.xxhash64(F.lit("N"), F.lit("r1")).alias("prefix"),
        F.xxhash64(F.lit("N"), F.lit("r1"), *[F.lit(o).cast("bigint") for o in kids]).alias("full"),
    ).collect()[0]
    assert spark_origin_of(row.prefix, kids) == row.full
    assert origin_of_compiled(row.prefix, np.array(kids, np.int64), mode=1) == row.full


def test_the_compiled_kernel_is_built_and_used_by_default() -> None:
    """The install builds the C kernel (a missing compiler would leave every DTable in Python),
    and ``auto`` uses it: same arrays as the compiled backend asked for by name."""
    from selp.topk.kernel import compiled_available

    assert compiled_available()
    g = Hypergraph(np.array([True, False]), np.array([0.5, 0.0]), np.array([3, 0]), np.array([0], np.int32),
                   np.array([1]), np.array([0, 1]), np.array([0]), np.array([0.9]), np.array([1]), np.array([11]),
                   np.array([False]))
    r = run_kernel(g, 0, -1.0, 2)
    assert r.w.tolist() == [0.5, 0.45]
    _same(r, _global(g, 0, -1.0, 2))


# --- brute force -----------------------------------------------------------------------------------

TREE_CAP = 20_000


def _brute_force(g: Hypergraph, combine: int, sign: float, k: int) -> dict[int, list[tuple[float, int]]]:
    """(weight, size) of each fact's k best distinct-origin trees, enumerating all trees (the
    hypergraph is acyclic)."""
    comb = [lambda a, b: a * b, lambda a, b: a + b][combine]
    F = g.n_facts
    by_head = defaultdict(list)
    for i in range(g.n_instances):
        by_head[int(g.inst_head[i])].append(i)
    trees: dict[int, list[tuple[float, int, int]]] = {}  # fact -> [(w, size, origin)]

    def of(f: int) -> list[tuple[float, int, int]]:
        if f in trees:
            return trees[f]
        if g.leaf[f]:
            trees[f] = [(float(g.leaf_w[f]), 0, int(g.leaf_origin[f]))]
            return trees[f]
        out = []
        for i in by_head[f]:
            r = int(g.inst_rule[i])
            kids = [of(int(c)) for c in g.child_fact[g.child_ptr[i]:g.child_ptr[i + 1]]]
            assume(math.prod(len(x) for x in kids) <= TREE_CAP)
            for combo in itertools.product(*kids):
                w, size = float(g.rule_w[r]), int(g.rule_size[r])
                for cw, cs, _ in combo:
                    w = comb(w, cw)
                    size += cs
                o = combo[0][2] if g.rule_copy[r] else origin_of(int(g.rule_hash[r]), [c[2] for c in combo])
                out.append((w, size, o))
        assume(len(out) <= TREE_CAP)
        trees[f] = out
        return out

    result = {}
    for f in range(F):
        best: dict[int, tuple] = {}
        for w, size, o in of(f):
            key = (sign * w, size, o)
            if o in best:  # the premise of deduplication: one origin, one weight and size
                assert best[o][:2] == key[:2]
            if o not in best or key < best[o]:
                best[o] = key
        ranked = sorted(best.values())[:k]
        result[f] = [(sign * kw, size) for kw, size, _ in ranked]
    return result


@given(st.data(), st.sampled_from(MONOTONE), st.integers(1, 5))
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_against_brute_force(data, monoid, k: int) -> None:
    combine, sign, weights, identity = monoid
    g = data.draw(hypergraphs(True, weights, identity, max_facts=9, max_inst=14))
    expected = _brute_force(g, combine, sign, k)
    res = run_kernel(g, combine, sign, k, backend="python")
    _same(res, _global(g, combine, sign, k))
    for f in range(g.n_facts):
        got = [(float(res.w[e]), int(res.size[e])) for e in range(res.fact_ptr[f], res.fact_ptr[f + 1])]
        assert got == expected[f], f


# --- the seen-set reference and the one-parent enumeration -----------------------------------------


def _reference_topk(g: Hypergraph, combine: int, sign: float, k: int) -> dict[int, list[tuple[float, int]]]:
    """``_Run.heuristic`` transcribed to the arrays: every modification of a popped vector is
    pushed, repeats are dropped by a seen-set, heap ties by insertion order."""
    comb = [lambda a, b: a * b, lambda a, b: a + b, min][combine]
    ent: dict[int, list[tuple]] = defaultdict(list)  # fact -> [(w, size, origin)]
    for f in range(g.n_facts):
        if g.leaf[f]:
            ent[f].append((float(g.leaf_w[f]), 0, int(g.leaf_origin[f])))
    kids = [tuple(int(c) for c in g.child_fact[g.child_ptr[i]:g.child_ptr[i + 1]]) for i in range(g.n_instances)]
    heap: list = []
    tie = itertools.count()
    seen: set = set()
    waiting: dict[tuple[int, int], list] = defaultdict(list)

    def try_push(c) -> None:
        i, ranks = c
        head = int(g.inst_head[i])
        if len(ent[head]) >= k:
            return
        for f, r in zip(kids[i], ranks):
            if len(ent[f]) < r:
                waiting[(f, r)].append(c)
                return
        rule = int(g.inst_rule[i])
        w, size, origins = float(g.rule_w[rule]), int(g.rule_size[rule]), []
        for f, r in zip(kids[i], ranks):
            cw, cs, co = ent[f][r - 1]
            w = comb(w, cw)
            size += cs
            origins.append(co)
        o = origins[0] if g.rule_copy[rule] else origin_of(int(g.rule_hash[rule]), origins)
        heapq.heappush(heap, ((sign * w, size, o), next(tie), head, w, c))

    def push(c) -> None:
        if c not in seen:
            seen.add(c)
            try_push(c)

    for i in range(g.n_instances):
        push((i, (1,) * len(kids[i])))
    while heap:
        key, _, head, w, (i, ranks) = heapq.heappop(heap)
        if len(ent[head]) >= k:
            continue
        if all(e[2] != key[2] for e in ent[head]):
            ent[head].append((w, key[1], key[2]))
            for c in waiting.pop((head, len(ent[head])), ()):
                try_push(c)
        for j in range(len(ranks)):
            push((i, ranks[:j] + (ranks[j] + 1,) + ranks[j + 1:]))
    return {f: [(w, s) for w, s, _ in ent[f]] for f in range(g.n_facts)}


@given(st.data(), st.booleans(), st.sampled_from(MONOTONE), st.integers(2, 5))
@SLOW
def test_one_parent_enumeration_matches_seen_set_reference(data, acyclic: bool, monoid, k: int) -> None:
    combine, sign, weights, identity = monoid
    g = data.draw(hypergraphs(acyclic, weights, identity, max_facts=12, max_inst=30))
    expected = _reference_topk(g, combine, sign, k)
    res = run_kernel(g, combine, sign, k, backend="python")
    for f in range(g.n_facts):
        got = [(float(res.w[e]), int(res.size[e])) for e in range(res.fact_ptr[f], res.fact_ptr[f + 1])]
        assert got == expected[f], f


@pytest.mark.parametrize(("m", "k"), [(0, 3), (1, 5), (2, 4), (3, 3), (4, 2), (3, 1)])
def test_one_parent_rule_reaches_every_vector_once(m: int, k: int) -> None:
    start = (1,) * m
    reached = [start]
    frontier = [start]
    while frontier:
        frontier = [child for v in frontier for child in modifications(v, k)]
        reached += frontier
    assert len(reached) == len(set(reached)) == k**m
    assert set(reached) == set(itertools.product(range(1, k + 1), repeat=m))


def test_one_parent_rule_skips_fixed_positions() -> None:
    k, fixed = 3, [False, True, False]
    reached, frontier = [(1, 1, 1)], [(1, 1, 1)]
    while frontier:
        frontier = [child for v in frontier for child in modifications(v, k, fixed)]
        reached += frontier
    assert len(reached) == len(set(reached)) == k * k
    assert all(v[1] == 1 for v in reached)


@pytest.mark.parametrize("k", [1, 2, 5])
@pytest.mark.parametrize("combine", [0, 1, 2])
def test_larger_random_graph_compiled_equals_python(k: int, combine: int) -> None:
    """Big enough that every array of the compiled kernel has to grow."""
    rng = np.random.default_rng(k * 10 + combine)
    F, I, R = 400, 3000, 6
    leaf = rng.random(F) < 0.2
    heads = rng.choice(np.flatnonzero(~leaf), I)
    rule_copy = np.array([False, False, False, False, True, True])
    inst_rule = rng.integers(0, R, I).astype(np.int32)
    arity = np.where(rule_copy[inst_rule], 1, rng.integers(0, 4, I))
    child_ptr = np.concatenate([[0], np.cumsum(arity)])
    g = Hypergraph(leaf, rng.choice([0.25, 0.5, 0.75, 1.0], F), rng.integers(-(2**63), 2**63 - 1, F), inst_rule,
                   heads, child_ptr, rng.integers(0, F, child_ptr[-1]), rng.choice([0.5, 0.75, 1.0], R),
                   np.where(rule_copy, 0, 1), rng.integers(-(2**63), 2**63 - 1, R), rule_copy)
    a = run_kernel(g, combine, -1.0, k, backend="python")
    _same(a, _global(g, combine, -1.0, k))
    assert (np.diff(a.fact_ptr) > 0).sum() > leaf.sum()  # the instances do derive things
    assert k == 1 or a.n_entries > F
    _check_invariants(g, a, combine, -1.0, k)


# --- transitive closure ----------------------------------------------------------------------------


def _tc(n_nodes: int, n_edges: int, seed: int):
    """Edges with weights, and the hypergraph of r1 (0.9) path(x,y) :- edge(x,y) and r2 (0.8)
    path(x,z) :- edge(x,y), path(y,z); edges are facts 0..E-1, paths follow."""
    rng = np.random.default_rng(seed)
    pairs = sorted({(int(a), int(b)) for a, b in rng.integers(0, n_nodes, (n_edges, 2))})
    ew = {e: float(w) for e, w in zip(pairs, np.round(rng.uniform(0.05, 1.0, len(pairs)), 3))}
    out = defaultdict(list)
    for a, b in pairs:
        out[a].append(b)
    reach = set()
    for x in range(n_nodes):  # pairs (x, z) with a non-empty path
        stack, seen = list(out[x]), set()
        while stack:
            z = stack.pop()
            if z not in seen:
                seen.add(z)
                stack.extend(out[z])
        reach |= {(x, z) for z in seen}
    eid = {e: i for i, e in enumerate(pairs)}
    pid = {p: len(pairs) + i for i, p in enumerate(sorted(reach))}
    inst_rule, inst_head, kids = [], [], []
    for (a, b), e in eid.items():
        inst_rule.append(0), inst_head.append(pid[(a, b)]), kids.append([e])
    for (a, b), e in eid.items():
        for (y, z), p in pid.items():
            if y == b:
                inst_rule.append(1), inst_head.append(pid[(a, z)]), kids.append([e, p])
    F = len(pairs) + len(pid)
    leaf = np.zeros(F, bool)
    leaf[: len(pairs)] = True
    leaf_w = np.zeros(F)
    leaf_w[: len(pairs)] = [ew[e] for e in pairs]
    child_ptr = np.zeros(len(kids) + 1, np.int64)
    child_ptr[1:] = np.cumsum([len(c) for c in kids])
    g = Hypergraph(leaf, leaf_w, rng.integers(-(2**63), 2**63 - 1, F), np.array(inst_rule, np.int32),
                   np.array(inst_head), child_ptr, np.array([f for c in kids for f in c]), np.array([0.9, 0.8]),
                   np.array([1, 1]), np.array([101, 202]), np.array([False, False]))
    return ew, pid, g


def _best_walks(ew: dict, n_nodes: int, k: int) -> dict[tuple[int, int], list[float]]:
    """The k best walk weights from every node to every node: a walk e1..en weighs
    0.8^(n-1) * 0.9 * prod(w), i.e. 1.125 * prod(0.8 * w). The classic k-shortest-walks
    best-first search (a node's (k+1)-th pop is not expanded); k = 1 is Dijkstra."""
    out = defaultdict(list)
    for (a, b), w in ew.items():
        out[a].append((b, 0.8 * w))
    result = {}
    for x in range(n_nodes):
        heap = [(-f, z) for z, f in out[x]]
        heapq.heapify(heap)
        got: dict[int, list[float]] = defaultdict(list)
        while heap:
            negw, y = heapq.heappop(heap)
            if len(got[y]) >= k:
                continue
            got[y].append(-negw * 1.125)
            for z, f in out[y]:
                heapq.heappush(heap, (negw * f, z))
        for z, ws in got.items():
            result[(x, z)] = ws
    return result


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k", [1, 3])
def test_transitive_closure_against_best_walks(seed: int, k: int) -> None:
    n_nodes = 12
    ew, pid, g = _tc(n_nodes, 30, seed)
    expected = _best_walks(ew, n_nodes, k)
    assert set(expected) == set(pid)
    res = run_kernel(g, 0, -1.0, k, backend="python")
    _same(res, _global(g, 0, -1.0, k))
    for p, f in pid.items():
        got = res.w[res.fact_ptr[f]:res.fact_ptr[f + 1]].tolist()
        assert got == pytest.approx(expected[p], rel=1e-12), p


def test_transitive_closure_against_local_engine(tmp_path) -> None:
    """The kernel and selp's local DTable (``_Run.heuristic``) on the same data."""
    from selp.database import load_database
    from selp.language import parse_program
    from selp.language.validate import analyze
    from selp.topk.local import run_topk_local
    from selp.topk.monoid import get_monoid
    from selp.topk.task import make_task

    n_nodes, k = 10, 4
    ew, pid, g = _tc(n_nodes, 25, 7)
    db_dir = tmp_path / "db"
    db_dir.mkdir()
    (db_dir / "edge.csv").write_text("c1,c2,_weight\n" + "".join(f"{a},{b},{w}\n" for (a, b), w in ew.items()))
    analysis = analyze(parse_program("r1 (0.9): path(x, y) :- edge(x, y).\nr2 (0.8): path(x, z) :- edge(x, y), path(y, z).\n"))
    db = load_database(analysis, db_dir)
    table = run_topk_local(make_task(analysis, db.types, get_monoid("confidence"), k), db, "heuristic")
    answers = table.answers()
    res = run_kernel(g, 0, -1.0, k)
    assert len(answers) == len(pid)
    for (x, z), f in pid.items():
        local = [(e.weight, e.size) for e in answers[("path", (x, z))]]
        got = list(zip(res.w[res.fact_ptr[f]:res.fact_ptr[f + 1]].tolist(), res.size[res.fact_ptr[f]:res.fact_ptr[f + 1]].tolist()))
        assert got == local, (x, z)


# --- validation ------------------------------------------------------------------------------------


def _tiny(**over) -> Hypergraph:
    base = dict(leaf=np.array([True, False]), leaf_w=np.array([0.5, 0.0]), leaf_origin=np.array([3, 0]),
                inst_rule=np.array([0], np.int32), inst_head=np.array([1]), child_ptr=np.array([0, 1]),
                child_fact=np.array([0]), rule_w=np.array([0.9]), rule_size=np.array([1]), rule_hash=np.array([11]),
                rule_copy=np.array([False]))
    base.update(over)
    return Hypergraph(**base)


@pytest.mark.parametrize(("over", "message"), [
    (dict(inst_head=np.array([0])), "leaf fact is the head"),
    (dict(child_fact=np.array([2])), "child_fact holds an index"),
    (dict(child_ptr=np.array([0, 2])), "child_ptr"),
    (dict(inst_rule=np.array([0.0])), "inst_rule must be of dtype int32"),
    (dict(leaf_w=np.array([0.5])), "leaf_w has 1 items"),
    (dict(rule_copy=np.array([True]), child_ptr=np.array([0, 0]), child_fact=np.array([], np.int64)), "copy rule"),
    (dict(rule_w=np.array([math.nan])), "NaN"),
])
def test_validation(over: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        run_kernel(_tiny(**over), 0, -1.0, 1)


def test_bad_parameters() -> None:
    for kw in (dict(combine=3), dict(sign=0.5), dict(k=0), dict(backend="gpu")):
        args = dict(combine=0, sign=-1.0, k=1) | kw
        with pytest.raises(ValueError):
            run_kernel(_tiny(), **args)


def test_unsigned_hashes_are_read_as_their_bits() -> None:
    a = run_kernel(_tiny(rule_hash=np.array([2**64 - 1], np.uint64)), 0, -1.0, 1)
    b = run_kernel(_tiny(rule_hash=np.array([-1])), 0, -1.0, 1)
    assert a.origin.tolist() == b.origin.tolist()


@given(st.data(), st.booleans(), st.integers(1, 6))
@SLOW
def test_tree_count_bound_compiled_equals_python_and_clamping_k_changes_nothing(data, acyclic: bool, k: int) -> None:
    """The C count and its twin agree; on an acyclic graph no fact has more entries than the
    bound, and the kernel run with min(k, bound) gives the same arrays as with k."""
    from selp.topk.kernel import _py_tree_count_bound, tree_count_bound

    g = data.draw(hypergraphs(acyclic, None, None))
    got = tree_count_bound(g, k)
    assert got == _py_tree_count_bound(g, k)
    if got is None:
        return
    assert 0 <= got <= k
    full = run_kernel(g, 0, -1.0, k)
    assert int(np.diff(full.fact_ptr).max(initial=0)) <= got
    if 1 <= got < k:
        _same(full, run_kernel(g, 0, -1.0, got))


@pytest.mark.parametrize("backend", ["python", "compiled"])
def test_signed_zero_keys_are_equal_so_the_smaller_tree_goes_first(backend: str) -> None:
    """Keys 0.0 and -0.0 are one weight: the order between them is the tree size's. W's second
    instance (size 2) needs Y (size 1, key +0.0) and so comes out first only if Y leaves the
    heap before W's first instance (size 10, key -0.0) -- a heap ordering the zeros by their bits
    gives W's entries the other way round."""
    # facts: 0 leaf (w -0.0), 1 leaf (w 0.0), 2 = Y <- 0 (size 1), 3 = W <- 1 (size 10), W <- Y (size 1)
    g = Hypergraph(leaf=np.array([True, True, False, False]), leaf_w=np.array([-0.0, 0.0, 0.0, 0.0]),
                   leaf_origin=np.array([11, 12, 0, 0]), inst_rule=np.array([0, 1, 2], np.int32),
                   inst_head=np.array([2, 3, 3]), child_ptr=np.array([0, 1, 2, 3]), child_fact=np.array([0, 1, 2]),
                   rule_w=np.ones(3), rule_size=np.array([1, 10, 1]), rule_hash=np.array([5, 6, 7]),
                   rule_copy=np.zeros(3, bool))
    res = run_kernel(g, 0, -1.0, 2, backend=backend)  # product, greatest first
    w_entries = range(res.fact_ptr[3], res.fact_ptr[4])
    assert [int(res.inst[e]) for e in w_entries] == [2, 1]
    assert [int(res.size[e]) for e in w_entries] == [2, 10]


def test_tree_count_bound_sees_a_cycle_and_counts_a_diamond() -> None:
    # facts 0, 1 leaves; 2 <- 0 twice (two instances), 3 <- (2, 2) and 3 <- 1; 4 <- 4 (a cycle)
    base = dict(leaf=np.array([True, True, False, False]), leaf_w=np.ones(4), leaf_origin=np.arange(4),
                rule_w=np.array([0.5]), rule_size=np.array([1]), rule_hash=np.array([7]), rule_copy=np.array([False]))
    g = Hypergraph(inst_rule=np.zeros(4, np.int32), inst_head=np.array([2, 2, 3, 3]), child_ptr=np.array([0, 1, 2, 4, 5]),
                   child_fact=np.array([0, 0, 2, 2, 1]), **base)
    from selp.topk.kernel import tree_count_bound

    assert tree_count_bound(g, 100) == 5  # fact 3: 2 x 2 + 1
    assert tree_count_bound(g, 3) == 3  # capped
    cyc = Hypergraph(inst_rule=np.zeros(2, np.int32), inst_head=np.array([2, 2]), child_ptr=np.array([0, 1, 2]),
                     child_fact=np.array([0, 2]), **{**base, "leaf": np.array([True, True, False, False])})
    assert tree_count_bound(cyc, 100) is None


def test_thread_count_comes_from_selp_threads_else_the_cores(monkeypatch) -> None:
    """SELP_THREADS sets how many components are ranked at once (spaces allowed, capped at 64);
    unset, every core this process may run on (outside a Spark task)."""
    import os

    from selp.topk.kernel import kernel_threads

    monkeypatch.setenv("SELP_THREADS", " 3 ")
    assert kernel_threads() == 3
    monkeypatch.setenv("SELP_THREADS", "1000")
    assert kernel_threads() == 64
    monkeypatch.delenv("SELP_THREADS")
    assert kernel_threads() == len(os.sched_getaffinity(0))


# --- the recursive enumeration (k > 1 where the ranking is monotone) -------------------------------


def _ranking(res: KernelResult, n_facts: int) -> list[list[tuple[float, int]]]:
    return [[(float(res.w[e]), int(res.size[e])) for e in range(res.fact_ptr[f], res.fact_ptr[f + 1])] for f in range(n_facts)]


def _recursive(g: Hypergraph, combine: int, sign: float, k: int, loop: str = "recursive") -> tuple[KernelResult, dict]:
    kbest_counts(reset=True)
    with kbest_loop(loop):
        res = run_kernel(g, combine, sign, k, backend="compiled")
    return res, kbest_counts(reset=True)


@pytest.mark.skipif(not compiled_available(), reason="the compiled kernel was not built")
@given(st.data(), st.booleans(), st.sampled_from(MONOTONE), st.integers(2, 5))
@SLOW
def test_recursive_enumeration_ranks_every_fact_as_the_global_loop(data, acyclic: bool, monoid, k: int) -> None:
    """Cycles, copy steps, ties of a real monoid: every fact gets the same weights and sizes,
    best first, and every entry is what its instance and children make (distinct origins)."""
    combine, sign, weights, identity = monoid
    g = data.draw(hypergraphs(acyclic, weights, identity, max_facts=12, max_inst=30))
    res, _ = _recursive(g, combine, sign, k)
    _check_invariants(g, res, combine, sign, k)
    assert _ranking(res, g.n_facts) == _ranking(_global(g, combine, sign, k), g.n_facts)


@pytest.mark.skipif(not compiled_available(), reason="the compiled kernel was not built")
@given(st.data(), st.sampled_from(MONOTONE), st.integers(2, 5))
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_recursive_enumeration_against_brute_force(data, monoid, k: int) -> None:
    combine, sign, weights, identity = monoid
    g = data.draw(hypergraphs(True, weights, identity, max_facts=9, max_inst=14))
    expected = _brute_force(g, combine, sign, k)
    res, _ = _recursive(g, combine, sign, k)
    assert _ranking(res, g.n_facts) == [expected[f] for f in range(g.n_facts)]


@pytest.mark.skipif(not compiled_available(), reason="the compiled kernel was not built")
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k", [2, 3, 7])
def test_recursive_enumeration_ranks_transitive_closure_and_is_the_loop_that_ran(seed: int, k: int) -> None:
    """On a cyclic closure (every path component one strongly connected component), the k best
    walks -- and the recursive enumeration, not the global loop, found them."""
    n_nodes = 12
    ew, pid, g = _tc(n_nodes, 30, seed)
    expected = _best_walks(ew, n_nodes, k)
    res, counts = _recursive(g, 0, -1.0, k)
    assert counts["recursive"] > 0 and counts["global"] == counts["fallback"] == 0
    for p, f in pid.items():
        got = res.w[res.fact_ptr[f]:res.fact_ptr[f + 1]].tolist()
        assert got == pytest.approx(expected[p], rel=1e-12), p


@pytest.mark.skipif(not compiled_available(), reason="the compiled kernel was not built")
def test_rankings_the_recursive_enumeration_cannot_take_go_to_the_global_loop() -> None:
    """A minimum minimised, a product of weights above 1 maximised, and a copy step inside a
    cycle (a tree no larger than its subtree) are ranked by the global loop, as the twin."""
    ew, pid, g = _tc(10, 25, 0)
    for combine, sign in ((2, 1.0), (0, -1.0)):
        h = g if combine == 2 else dataclasses.replace(g, rule_w=np.array([1.5, 2.0]))
        res, counts = _recursive(h, combine, sign, 3)
        assert counts["recursive"] == 0 and counts["global"] > 0
        _same(res, run_kernel(h, combine, sign, 3, backend="python"))
    # e (a leaf), a :- e, b :- a (a copy step), a :- b: the cycle a, b, a adds no size
    copying = Hypergraph(np.array([True, False, False]), np.array([0.9, 0.0, 0.0]), np.array([7, 0, 0]),
                         np.array([0, 1, 2], np.int32), np.array([1, 2, 1]), np.array([0, 1, 2, 3]), np.array([0, 1, 2]),
                         np.array([0.9, 1.0, 0.5]), np.array([1, 0, 1]), np.array([11, 0, 33]), np.array([False, True, False]))
    res, counts = _recursive(copying, 0, -1.0, 3)
    assert res.fact_ptr[-1] - res.fact_ptr[-2] == 3  # b has three trees: not vacuous
    assert counts["recursive"] == 0 and counts["global"] > 0
    _same(res, run_kernel(copying, 0, -1.0, 3, backend="python"))


@pytest.mark.skipif(not compiled_available(), reason="the compiled kernel was not built")
@pytest.mark.parametrize("k", [2, 5])
def test_a_component_the_recursive_enumeration_gives_up_is_ranked_again_by_the_global_loop(k: int) -> None:
    """The fallback (a request meeting a fact on the stack; forced here at every nested request):
    the component's blocks are reset and the global loop's arrays come out, bit for bit."""
    ew, pid, g = _tc(12, 30, 1)
    res, counts = _recursive(g, 0, -1.0, k, loop="fallback")
    assert counts["fallback"] > 0
    _same(res, _global(g, 0, -1.0, k))


@pytest.mark.skipif(not compiled_available(), reason="the compiled kernel was not built")
def test_the_loop_is_named_or_refused(monkeypatch) -> None:
    with pytest.raises(ValueError, match="recursive, global"):
        with kbest_loop("fast"):
            pass
    from selp.errors import SelpError
    from selp.topk import kernel

    monkeypatch.setenv(kernel.LOOP_ENV, "quick")
    monkeypatch.setattr(kernel, "_LIB", [])
    try:
        with pytest.raises(SelpError, match="SELP_KBEST_LOOP must be one of recursive, global, not 'quick'"):
            kernel._compiled()
    finally:
        monkeypatch.delenv(kernel.LOOP_ENV)
        kernel._LIB.clear()
