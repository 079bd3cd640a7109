"""A Spark partition's DTable ranked component by component (selp.topk.component_static) is the
one the whole-partition path (the partition's hypergraph through the global kernel) gives:
the same facts, and for every fact the same entries -- weight, size, origin, rule, child
pointers, rank -- ties included. In-process: what a task gets (seed entries, lower relations'
entries) is made up here, with many ties on weight and several seed entries per fact."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest

from selp.engines.embedded.component import ComponentTask, fixpoint
from selp.engines.embedded.store import close, connect
from selp.language import parse_program
from selp.topk import component
from selp.topk.component import DTableTask, partition_dtable
from selp.topk.component_static import static_dtable, static_reason
from selp.topk.kernel import PRODUCT, SUM, compiled_available, kbest_counts, kbest_loop
from selp.topk.packed import PTR_ARROW, Packed, Steps

pytestmark = pytest.mark.skipif(not compiled_available(), reason="the compiled kernel was not built")

# (program, member, input relations with arities): each decomposable, its inputs EDB
PROGRAMS = [
    ("r2 (0.8): path(x, z) :- edge(x, y), path(y, z).", "path", {"edge": 2}),
    ("r2 (0.7): reach(x, z) :- reach(x, y), edge(y, z).", "reach", {"edge": 2}),
    ("r2 (0.9): p(x, z) :- e(x, y), f(y, w), p(w, z).\nr3 (0.6): p(x, z) :- e(x, y), p(y, z), g(y).",
     "p", {"e": 2, "f": 2, "g": 1}),
    # decomposable by value components only (a symmetry rule): grouped by value classes
    ("r2 (0.8): tc(x, y) :- tc(y, x).\nr3 (0.7): tc(x, y) :- tc(x, z), edge(z, y).", "tc", {"edge": 2}),
    # the head shares no value with the recursive atom: only the input facts link them
    ("r2 (0.9): p(x, y) :- p(z, w), e(w, x), e(z, y).\nr3 (0.8): p(x, y) :- p(y, x).", "p", {"e": 2}),
]
VALUE_PROGRAMS = (3, 4)


def _case(rng: np.random.Generator, which: int, k: int, combine: int) -> tuple[DTableTask, dict, dict]:
    text, member, ins = PROGRAMS[which]
    rules = parse_program(text).rules
    nodes = int(rng.integers(5, 25))
    weights = [0.5, 0.8, 1.0] if combine == PRODUCT else [0.0, 1.0, 2.0]

    def entries(n: int, arity: int) -> dict:
        return {f"c{i}": pa.array([str(v) for v in rng.integers(0, nodes, n)]) for i in range(arity)} | {
            "_w": pa.array(rng.choice(weights, n)), "_s": pa.array(rng.integers(0, 3, n)),
            "_o": pa.array(rng.integers(-2**62, 2**62, n))}

    inputs = {}
    for rel, arity in ins.items():
        cols = entries(int(rng.integers(nodes, 4 * nodes)), arity)
        facts = pa.table({c: v for c, v in cols.items() if c.startswith("c")}).group_by([f"c{i}" for i in range(arity)]).aggregate([])
        # an EDB fact has one entry: one per distinct fact, a key of its own
        t = pa.table(entries(facts.num_rows, 0)).append_column("_f", pa.array(rng.integers(-2**62, 2**62, facts.num_rows)))
        for i in range(arity):
            t = t.append_column(f"c{i}", facts.column(f"c{i}"))
        inputs[rel] = t
    n = int(rng.integers(nodes, 3 * nodes))
    seed = pa.table(entries(n, 2))
    # several seed entries for some facts: the exit rules' k best, each an entry of its own
    seed = pa.concat_tables([seed, seed.slice(0, n // 3).set_column(2, "_w", pa.array(rng.choice(weights, n // 3)))
                             .set_column(4, "_o", pa.array(rng.integers(-2**62, 2**62, n // 3)))])
    m = seed.num_rows
    ch = pa.array([[{"f": int(a), "o": int(b)}] for a, b in rng.integers(-2**62, 2**62, (m, 2))], PTR_ARROW)
    seed = seed.append_column("_rule", pa.array(rng.choice(["r1", "r0"], m))).append_column("_ch", ch)
    arities = {member: 2} | ins
    comp = ComponentTask((member,), tuple(rules), arities, {r: ("int",) * a for r, a in arities.items()})
    names = [r.name for r in rules]
    task = DTableTask(comp, {r: float(rng.choice(weights)) for r in names}, {r: 1 for r in names},
                      {r: int(rng.integers(-2**62, 2**62)) for r in names}, combine, -1.0 if combine == PRODUCT else 1.0,
                      1.0 if combine == PRODUCT else 0.0, k, salt=0x5EED << 24)
    return task, {member: seed}, inputs


def _rows(p: Packed | None, task: DTableTask, partition: int) -> tuple:
    """The rows the packed partition unpacks into (as Spark reads them), sorted."""
    assert p is not None
    rules = Steps.of(task)
    e = p.rows(task.salt, partition, rules).to_pydict()
    rows = sorted(zip(e["_f"], e["rank"], e["_w"], e["_s"], e["_o"], map(str, e["_rule"]), map(str, e["_ch"])))
    return p.facts.to_pydict()["args"], rows


@pytest.mark.parametrize("seed", range(12))
def test_component_by_component_ranks_a_partition_as_the_whole_partition_path(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    k = [1, 2, 3, 7][seed % 4]
    task, seeds, inputs = _case(rng, seed % len(PROGRAMS), k, [PRODUCT, SUM][seed // 5 % 2])
    assert static_reason(task.component, k, set(inputs)) == ""
    # the static path serves this partition (it does not fall back on its own)
    con = connect()
    try:
        store, _ = fixpoint(con, task.component, seeds, inputs)
        assert isinstance(static_dtable(task, con, store, seeds, inputs, 5), Packed)
    finally:
        close(con)
    kbest_counts(reset=True)
    static = partition_dtable(replace(task, by_component=True), seeds, inputs, 5)
    # k > 1: the static path's groups (linear instances) take the enumeration by streams
    assert (kbest_counts(reset=True)["linear"] > 0) == (k > 1)
    full = partition_dtable(task, seeds, inputs, 5)
    # the same Arrow types too, but for the origins the static path leaves to the unpacking
    assert static is not None and full is not None and "_o" not in static.entries.column_names
    assert static.entries.schema == full.entries.drop_columns(["_o"]).schema
    # weights and sizes travel neither way: unpacking recomputes them (bit for bit, below)
    assert not {"_w", "_s"} & set(static.entries.column_names)
    by_component, whole = _rows(static, task, 5), _rows(full, task, 5)
    assert by_component == whole
    # the weights and sizes the kernel ranked by, shipped, are the ones unpacking recomputes
    monkeypatch.setattr(component, "compiled_available", lambda: False)
    shipped = partition_dtable(task, seeds, inputs, 5)
    assert shipped is not None and {"_w", "_s"} <= set(shipped.entries.column_names)
    assert _rows(shipped, task, 5) == whole
    assert max(r[1] for r in whole[1]) == k  # not vacuous: some fact has k entries


@pytest.mark.parametrize("seed", [1, 2, 3, 6, 7])
def test_a_group_the_enumeration_gives_up_is_ranked_again_by_the_global_loop(seed):
    """Where the enumeration over streams meets a fact on the stack (the tests' "fallback" mode
    takes every nested request for one), the group's blocks are reset and the global loop ranks
    it: the same rows as the enumeration's."""
    rng = np.random.default_rng(seed)
    k = [1, 2, 3, 7][seed % 4]
    task, seeds, inputs = _case(rng, seed % len(PROGRAMS), k, [PRODUCT, SUM][seed // 5 % 2])
    task = replace(task, by_component=True)
    want = _rows(partition_dtable(task, seeds, inputs, 5), task, 5)
    kbest_counts(reset=True)
    with kbest_loop("fallback"):
        got = _rows(partition_dtable(task, seeds, inputs, 5), task, 5)
    counts = kbest_counts(reset=True)
    assert counts["fallback"] > 0  # (a group with no nested request is still ranked by the streams)
    assert got == want


def test_a_lower_fact_with_several_entries_keeps_the_whole_partition_path():
    """Ties between trees through a lower fact's entries resolve as Spark's rounds resolve
    them only when the fact is ranked as one fact: the plan says why, a partition that gets
    such entries anyway falls back, and either way the entries are the whole path's."""
    task, seeds, inputs = _case(np.random.default_rng(99), 0, 3, PRODUCT)
    assert "derived relation edge" in static_reason(task.component, 3, set())
    edge = inputs["edge"]
    inputs = {"edge": pa.concat_tables([edge, edge.set_column(edge.schema.get_field_index("_o"), "_o", pa.array(np.arange(edge.num_rows, dtype=np.int64)))])}
    con = connect()
    try:
        store, _ = fixpoint(con, task.component, seeds, inputs)
        assert static_dtable(task, con, store, seeds, inputs, 0) == "a fact of edge has several entries"
    finally:
        close(con)
    assert _rows(partition_dtable(replace(task, by_component=True), seeds, inputs, 0), task, 0) == _rows(partition_dtable(task, seeds, inputs, 0), task, 0)


def test_plan_reasons_for_the_whole_partition_path():
    rules = parse_program("r2 (0.8): a(x, z) :- edge(x, y), b(y, z).\nr3 (0.8): b(x, z) :- edge(x, y), a(y, z).").rules
    comp = ComponentTask(("a", "b"), tuple(rules), {"a": 2, "b": 2, "edge": 2}, {r: ("int", "int") for r in "ab"} | {"edge": ("int", "int")})
    assert static_reason(comp, 3, {"edge"}) == "2 mutually recursive relations (one is needed)"
    rules = parse_program("r2 (0.8): path(x, z) :- edge(x, y), path(y, z).").rules
    comp = ComponentTask(("path",), tuple(rules), {"path": 2, "edge": 2}, {"path": ("int", "int"), "edge": ("int", "int")})
    assert static_reason(comp, 65, {"edge"}) == "k > 64"
    rules = parse_program("r2 (0.8): path(x, z) :- edge(x, y), path(y, z), not edge(z, x).").rules
    comp = replace(comp, recursive_rules=tuple(rules))
    assert static_reason(comp, 3, {"edge"}) == "rule r2 is not formed by the kernel's join"


@pytest.mark.parametrize("seed", range(4))
def test_child_slots_from_the_kernel_are_the_numpy_ones(seed, monkeypatch):
    """Both paths pack the entries' child slots in C (``selp_pack_slots``,
    ``selp_pack_static_slots``) where the kernel is built; without it numpy computes them. The
    packed partitions are the same, array for array (seed entries among the children)."""
    import selp.topk.kernel as kernel

    rng = np.random.default_rng(100 + seed)
    k = [1, 3, 7, 2][seed]
    task, seeds, inputs = _case(rng, seed % len(PROGRAMS), k, [PRODUCT, SUM][seed % 2])
    got = {}
    for compiled in (True, False):
        if not compiled:
            monkeypatch.setattr(kernel, "library", lambda: None)
        got[compiled] = [partition_dtable(t, seeds, inputs, 3) for t in (task, replace(task, by_component=True))]
    for with_c, with_numpy in zip(got[True], got[False]):
        assert with_c is not None and with_numpy is not None
        assert with_c.entries.num_rows > with_c.facts.num_rows or k == 1
        assert with_c.entries.equals(with_numpy.entries) and with_c.leaves.equals(with_numpy.leaves)
        slots = with_c.entries.column("_c").combine_chunks().flatten()
        assert pa.compute.sum(pa.compute.equal(slots.field("r"), 0)).as_py() > 0  # leaf slots (EDB, seeds) too


@pytest.mark.parametrize("which", VALUE_PROGRAMS)
@pytest.mark.parametrize("k", [1, 3])
def test_value_components_are_ranked_group_by_group(which, k, monkeypatch):
    """A component that decomposes by value components only (a symmetry rule links the groups of
    every position) is ranked component by component, its facts grouped by the classes of their
    values -- the input facts' values included, which alone link a head to its recursive atom in
    the second program. Several groups, each ranked on its own, give the whole path's entries."""
    import selp.topk.decomposed as decomposed

    groups = []
    run_static = decomposed.run_static

    def counting(*args, **kw):  # noqa: ANN002, ANN003, ANN202
        got = run_static(*args, **kw)
        groups.append(getattr(got, "groups", got))
        return got

    monkeypatch.setattr("selp.topk.component_static.run_static", counting)
    def islands(t: pa.Table) -> pa.Table:  # only facts whose values agree mod 3: three islands at least
        cols = [c for c in t.column_names if c.startswith("c")]
        keep = [len({int(v) % 3 for v in vals}) == 1 for vals in zip(*(t.column(c).to_pylist() for c in cols))]
        return t.filter(pa.array(keep))

    for seed in range(3):
        task, seeds, inputs = _case(np.random.default_rng(1000 + seed), which, k, PRODUCT)
        seeds, inputs = {r: islands(t) for r, t in seeds.items()}, {r: islands(t) for r, t in inputs.items()}
        assert static_reason(task.component, k, set(inputs)) == ""
        static = partition_dtable(replace(task, by_component=True), seeds, inputs, 2)
        assert _rows(static, task, 2) == _rows(partition_dtable(task, seeds, inputs, 2), task, 2)
    assert all(isinstance(g, int) for g in groups), groups  # the static path served every partition
    assert max(groups) > 1  # not vacuous: a partition of several groups


def test_value_classes_are_the_connected_components_of_the_pairs():
    """The kernel's union-find (``selp_value_classes``) labels each value with the smallest value
    of its class: the connected components of the graph of the pairs (numpy's union-find of the
    Spark labelling, :func:`selp.engines.spark_values.components`, as the oracle)."""
    from selp.engines.spark_values import components
    from selp.topk.kernel import address, library

    rng = np.random.default_rng(7)
    for n, p in ((1, 0), (50, 20), (400, 300), (2000, 1990)):
        a, b = rng.integers(0, n, p), rng.integers(0, n, p)
        root = np.empty(n, np.int64)
        library().selp_value_classes(n, p, address(a), address(b), address(root))
        assert np.array_equal(root, components(a, b, n))
