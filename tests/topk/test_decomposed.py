"""Top-k component by component (selp.topk.decomposed) against the global path and the
reference engine: the same entries -- weights, sizes, origins, rules, children and their ranks --
for decomposable programs of every shape the path takes, and the global path, saying why, for
the others."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers.topk import edge_db, embedded_both_ways, ranking
from selp.topk import embedded
from selp.topk.api import parse_fact_filter, topk
from selp.topk.kernel import compiled_available, kbest_counts

pytestmark = pytest.mark.skipif(not compiled_available(), reason="the C kernel was not built")

# every weight equal: ties everywhere, broken by size and origin
EDGES = [(0, 1), (1, 2), (2, 0), (1, 3), (3, 1), (2, 3), (3, 3), (10, 11), (11, 12), (12, 10), (11, 10), (0, 10)]

RIGHT = "r1 (0.5): path(x, y) :- edge(x, y).\nr2 (0.5): path(x, z) :- edge(x, y), path(y, z).\n"
LEFT = "r1 (0.5): path(x, y) :- edge(x, y).\nr2 (0.5): path(x, z) :- path(x, y), edge(y, z).\n"
SHAPES = RIGHT + (
    "r3 (0.5): path(x, x) :- edge(x, x).\n"  # a repeated variable in an exit rule and its head
    "r4 (0.5): path(x, z) :- edge(x, 3), path(3, z).\n"  # a constant in the driver atom (filtered)
    "r5 (0.5): path(x, 1) :- edge(x, 1), edge(1, x).\n"  # constants in head and body
    "r6 (0.5): path(x, z) :- edge(x, y), path(y, z), edge(y, y).\n"  # two EDB atoms, one repeated variable
    "r7 (0.5): path(x, z) :- path(x, z), mark(z).\n"  # a copy-like step through a keyed relation
)
NONLINEAR = "r1 (0.5): path(x, y) :- edge(x, y).\nr2 (0.5): path(x, z) :- path(x, y), path(y, z).\n"
# a symmetry rule: no position is passed, the facts split by the classes of their values
SYMMETRIC = LEFT + "r3 (0.25): path(x, y) :- path(y, x).\n"


def _db(tmp_path: Path, program: str, weights: dict | None = None) -> tuple[str, str]:
    prog, db = edge_db(tmp_path, EDGES, program, weights)
    (tmp_path / "db" / "mark.csv").write_text("c1\n3\n10\n", encoding="utf-8")
    return prog, db


def _both(monkeypatch, prog: str, db: str, pattern: str, k: int, **kw) -> tuple:
    """The DTable component by component (the default where it applies) and on the global path."""
    return embedded_both_ways(monkeypatch, embedded, "global", prog, db, pattern, k, **kw)


@pytest.mark.parametrize("program", [RIGHT, LEFT, SHAPES], ids=["right", "left", "shapes"])
@pytest.mark.parametrize("k", [1, 2, 3, 6])
@pytest.mark.parametrize("weighted", [False, True], ids=["ties", "weights"])
def test_component_by_component_gives_the_global_paths_entries(tmp_path: Path, monkeypatch, program: str, k: int,
                                                               weighted: bool) -> None:
    """Left- and right-recursive closure, constants in the driver, exit rules and heads, repeated
    variables, several EDB atoms, cyclic graphs with ties everywhere or distinct weights: every
    entry (weight, size, origin, rule, children and the ranks they use) is the global path's, and
    the ranking the reference engine's."""
    weights = {e: round(0.5 + 0.04 * i, 2) for i, e in enumerate(EDGES)} if weighted else None
    prog, db = _db(tmp_path, program, weights)
    kbest_counts(reset=True)
    static, whole = _both(monkeypatch, prog, db, "path(*, *)", k)
    # k > 1: the groups' entries 2..k by the enumeration over linear instances (streams), which
    # the global path does not take: the comparison below is between the two enumerations
    assert (kbest_counts(reset=True)["linear"] >= 2) == (k > 1)
    assert static.meta.formed.get("components", 0) >= 2 and "component by component" in static.stats_note
    assert not whole.meta.formed.get("components")
    got = static.answers()
    assert got and got == whole.answers()
    ref = topk(prog, db, "path(*, *)", k, engine="reference").answers()
    assert ranking(got, True) == ranking(ref, True)


def test_string_keys_are_grouped_by_their_code(tmp_path: Path, monkeypatch) -> None:
    """String columns (dictionary codes) as the decomposition key and in the head lookup."""
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "knows.csv").write_text(
        "c1,c2,_weight\nann,bob,0.9\nbob,cid,0.8\ncid,ann,0.7\nbob,ann,0.6\ncid,dan,0.5\n", encoding="utf-8")
    (tmp_path / "p.dl").write_text(
        "r1 (0.9): reach(x, y) :- knows(x, y).\nr2 (0.8): reach(x, z) :- knows(x, y), reach(y, z).\n"
        "r3 (0.7): reach(x, \"ann\") :- knows(x, \"bob\").\n", encoding="utf-8")
    prog, db = str(tmp_path / "p.dl"), str(tmp_path / "db")
    static, whole = _both(monkeypatch, prog, db, "reach(*, *)", 3)
    assert static.meta.formed["components"] == 4  # ann, bob, cid, dan
    assert static.answers() == whole.answers()
    ref = topk(prog, db, "reach(*, *)", 3, engine="reference").answers()
    assert ranking(static.answers(), True) == ranking(ref, True)


def test_goal_directed_explain_runs_component_by_component(tmp_path: Path, monkeypatch) -> None:
    """The demand rewriting of explain adds filter atoms (joined, no children): one component,
    the trees of full evaluation."""
    prog, db = _db(tmp_path, RIGHT)
    node = parse_fact_filter("path(0, 3)")
    static, whole = _both(monkeypatch, prog, db, "*", 3, fact=node)
    assert static.meta.formed["components"] >= 1
    full = topk(prog, db, "*", 3, engine="embedded", goal_directed=False).answers()
    want = {f: es for f, es in full.items() if node.matches_fact(*f)}
    got = {f: es for f, es in static.answers().items() if node.matches_fact(*f)}
    assert got and got == want == {f: es for f, es in whole.answers().items() if node.matches_fact(*f)}


@pytest.mark.parametrize("k", [1, 2, 3, 6])
@pytest.mark.parametrize("weighted", [False, True], ids=["ties", "weights"])
def test_value_components_give_the_global_paths_entries(tmp_path: Path, monkeypatch, k: int, weighted: bool) -> None:
    """A symmetry rule (the TC benchmark's shape) decomposes by value components only: the facts
    are grouped by the classes of their values -- the graph's two islands -- and every entry is
    the global path's, the ranking the reference engine's."""
    edges = [e for e in EDGES if e != (0, 10)]  # two islands: {0, 1, 2, 3} and {10, 11, 12}
    weights = {e: round(0.5 + 0.04 * i, 2) for i, e in enumerate(edges)} if weighted else None
    prog, db = edge_db(tmp_path, edges, SYMMETRIC, weights)
    kbest_counts(reset=True)
    static, whole = _both(monkeypatch, prog, db, "path(*, *)", k)
    assert (kbest_counts(reset=True)["linear"] >= 2) == (k > 1)  # two islands
    assert static.meta.formed.get("components") == 2 and "2 component(s) of path by value classes" in static.stats_note
    got = static.answers()
    assert got and got == whole.answers()
    assert ranking(got, True) == ranking(topk(prog, db, "path(*, *)", k, engine="reference").answers(), True)


@pytest.mark.parametrize(("program", "pattern", "why"), [
    (NONLINEAR, "path(*, *)", "nonlinear"),
    (RIGHT, "path(*, *) // edge(0, *)", "derived relations"),
])
def test_other_programs_take_the_global_path_and_say_why(tmp_path: Path, program: str, pattern: str, why: str) -> None:
    """Non-linear recursion, and a pattern whose instrumentation derives several relations
    (where same-origin deduplication happens): the global path, the reason in the stats."""
    prog, db = _db(tmp_path, program)
    got = topk(prog, db, pattern, 3, engine="embedded")
    assert not got.meta.formed.get("components")
    assert "not component by component" in got.stats_note and why in got.stats_note
    ref = topk(prog, db, pattern, 3, engine="reference").answers()
    assert ranking(got.answers(), True) == ranking(ref, True)


def test_fewer_trees_than_k_is_said_on_this_path_too(tmp_path: Path) -> None:
    """An acyclic decomposable program with k above every fact's number of trees: the warning
    of the global path (its tree-count bound, here counted group by group), the same answers."""
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "e.csv").write_text("a,b\n" + "".join(f"{i},{i + 1}\n" for i in range(12)))
    (tmp_path / "db" / "f.csv").write_text("a,b\n" + "".join(f"{i},{i + 2}\n" for i in range(0, 12, 5)))
    prog = tmp_path / "p.dl"
    prog.write_text("p(x,y) :- e(x,y).\np(x,y) :- f(x,y).\np(x,z) :- e(x,y), p(y,z).\n")

    def run(k: int) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "selp", "topk", str(prog), "--db", str(tmp_path / "db"),
                               "--pattern", "p", "--format", "json", "-k", str(k), "-v"],
                              capture_output=True, text=True, check=False)

    five, two = run(5), run(2)
    assert five.returncode == 0 and two.returncode == 0, five.stderr[-2000:]
    assert "component by component" in five.stderr
    assert "k=5 is more than any fact's number of derivation trees (at most 2)" in five.stderr
    assert five.stdout.replace('"k": 5', '"k": 2') == two.stdout


@pytest.mark.parametrize("k", [1, 3])
def test_summary_and_saved_dtable_read_the_rows_component_by_component(tmp_path: Path, monkeypatch, k: int) -> None:
    """The component-by-component result keeps its entries in its own row order: the summary
    (read from the arrays) and a saved DTable are the global path's."""
    from selp.topk.dtable import load_dtable, save_dtable

    weights = {e: round(0.5 + 0.04 * i, 2) for i, e in enumerate(EDGES)}
    prog, db = _db(tmp_path, RIGHT, weights)
    static, whole = _both(monkeypatch, prog, db, "path(*, *)", k)
    assert static.res.row is not None
    assert whole.res.row is None
    assert static.summary() == whole.summary()
    save_dtable(static, str(tmp_path / "a"))
    save_dtable(whole, str(tmp_path / "b"))
    assert load_dtable(str(tmp_path / "a")).answers() == load_dtable(str(tmp_path / "b")).answers() == whole.answers()


def _random_edges(n: int, m: int, seed: int) -> tuple[list, dict]:
    import random

    rnd = random.Random(seed)
    edges = sorted({(rnd.randrange(n), rnd.randrange(n)) for _ in range(m)})
    # few distinct weights: equal weights (ties broken by size and origin) are common
    return edges, {e: rnd.choice([0.5, 0.6, 0.75, 0.9]) for e in edges}


@pytest.mark.parametrize("k", [1, 3, 7])
@pytest.mark.parametrize("seed", [1, 2])
def test_threads_give_the_one_thread_entries(tmp_path: Path, monkeypatch, k: int, seed: int) -> None:
    """Components ranked on several threads (SELP_THREADS): every entry -- weight, size, origin,
    rule, children and ranks -- and every fact's entry count are the one-thread run's, whatever
    the split of the components between the threads (more threads than cores, too), and the
    global path's."""
    edges, weights = _random_edges(40, 110, seed)
    prog, db = edge_db(tmp_path, edges, LEFT if seed == 2 else RIGHT, weights)
    runs = {}
    for threads in ("1", "2", "5"):
        monkeypatch.setenv("SELP_THREADS", threads)
        runs[threads] = topk(prog, db, "path(*, *)", k, engine="embedded")
    one = runs["1"]
    assert one.meta.formed.get("components", 0) >= 10
    want = one.answers()
    assert (sum(len(es) for es in want.values()) > len(want)) == (k > 1)  # k > 1: facts with several trees
    for threads in ("2", "5"):
        got = runs[threads]
        assert got.answers() == want, threads
        assert got.summary() == one.summary()
        assert int(got.res.fact_ptr[-1]) == int(one.res.fact_ptr[-1])
    monkeypatch.setattr(embedded, "FORM_INSTANCES", "global")
    assert topk(prog, db, "path(*, *)", k, engine="embedded").answers() == want


def test_a_bad_thread_count_is_one_located_line(tmp_path: Path) -> None:
    """SELP_THREADS that is not a whole number >= 1: one line naming the value, exit 1."""
    prog, db = _db(tmp_path, RIGHT)
    for bad in ("two", "0", "-1"):
        got = subprocess.run([sys.executable, "-m", "selp", "topk", prog, "--db", db, "--pattern", "path(*, *)",
                              "--format", "summary"], capture_output=True, text=True, check=False,
                             env={**__import__("os").environ, "SELP_THREADS": bad})
        assert got.returncode == 1, got.stderr
        assert "Traceback" not in got.stderr
        assert f"SELP_THREADS must be a whole number >= 1, not '{bad}'" in got.stderr


@pytest.mark.parametrize("k", [1, 3, 7])
def test_two_workers_write_the_one_thread_arrays(tmp_path: Path, monkeypatch, k: int) -> None:
    """Two threads write one result from both ends and close the gap between them (kernel ABI
    8): the arrays the DTable reads -- every entry's weight bits, size, origin, rule, children,
    ranks and every row's first entry -- are the one-thread run's, position for position, also
    when facts have fewer than k trees (the reservation for k per fact is then not filled and
    the gap is not empty); the instance of an entry is the entry itself, -1 for a leaf."""
    edges, weights = _random_edges(40, 110, 3)
    # acyclic (edges point up): many facts have fewer than k trees
    edges = [(a, b) for a, b in edges if a < b]
    prog, db = edge_db(tmp_path, edges, RIGHT, {e: weights[e] for e in edges})
    # both runs rank the one evaluated program: DuckDB numbers the facts in whatever order its
    # threads give them, so two evaluations can number them differently
    runs = {}
    real = embedded.run_static

    def one_then_two(*args, **kwargs):
        runs["1"] = real(*args, **{**kwargs, "threads": 1})
        runs["2"] = real(*args, **{**kwargs, "threads": 2})
        return runs["2"]

    monkeypatch.setattr(embedded, "run_static", one_then_two)
    assert topk(prog, db, "path(*, *)", k, engine="embedded").meta.formed.get("components", 0) >= 10
    one, two = runs["1"].result, runs["2"].result
    g1, g2 = runs["1"].graph, runs["2"].graph
    leaves = int(g1.leaf.sum())
    derived = len(one.row) - leaves
    if k > 1:  # some fact has fewer than k trees: the two ends did not meet
        assert int(one.fact_ptr[-1]) < leaves + derived * k
    assert np.array_equal(one.row, two.row)
    assert np.array_equal(one.fact_ptr, two.fact_ptr)
    assert np.array_equal(one.w.view(np.int64), two.w.view(np.int64))
    for name in ("size", "origin", "child_rank_ptr", "child_rank"):
        assert np.array_equal(getattr(one, name), getattr(two, name)), name
    assert np.array_equal(g1.inst_rule, g2.inst_rule) and np.array_equal(g1.child_fact, g2.child_fact)
    n = len(one.w)
    assert one.inst_given is None and two.inst_of(n - 1) == n - 1 and two.inst_of(0) == -1
    assert np.array_equal(two.inst, np.where(np.arange(n) < leaves, -1, np.arange(n)))


def test_more_facts_than_int32_child_ids_take_the_global_path(tmp_path: Path, monkeypatch) -> None:
    """The static path writes children's fact ids as int32: a program with more facts than
    STATIC_MAX_FACTS (2^31 - 1; lowered here) takes the global path, says so, and gets the
    same entries; at the limit it stays component by component."""
    prog, db = _db(tmp_path, RIGHT)
    want = topk(prog, db, "path(*, *)", 3, engine="embedded")
    assert want.meta.formed.get("components")
    facts = int(want.res.fact_ptr.shape[0]) - 1
    monkeypatch.setattr(embedded, "STATIC_MAX_FACTS", facts)
    assert topk(prog, db, "path(*, *)", 3, engine="embedded").meta.formed.get("components")
    monkeypatch.setattr(embedded, "STATIC_MAX_FACTS", facts - 1)
    got = topk(prog, db, "path(*, *)", 3, engine="embedded")
    assert not got.meta.formed.get("components")
    assert f"more than {facts - 1} facts" in got.stats_note
    assert got.answers() == want.answers()


@pytest.mark.parametrize(("over", "static"), [(0, True), (1, False)], ids=["at-int32-max", "beyond"])
def test_a_tree_size_beyond_int32_takes_the_global_path(tmp_path: Path, monkeypatch, over: int, static: bool) -> None:
    """The static path writes sizes as int32 (kernel ABI 9). Every tree of the closure has one
    exit step (r1), so r1's size raised by X adds X to every size and keeps the ranking: raised
    until the largest size is exactly 2^31 - 1, the path stays component by component; one
    more, and it takes the global path, says why, and gives the same entries as the global path."""
    prog, db = _db(tmp_path, RIGHT)
    unit = topk(prog, db, "path(*, *)", 3, engine="embedded")
    assert unit.meta.formed.get("components")
    largest = max(e.size for es in unit.answers().values() for e in es)
    real = embedded._rule_arrays

    def raised(task, meta):
        w, size, h, copy = real(task, meta)
        size = size.copy()
        size[meta.rule_index["r1"]] += 2**31 - 1 - largest + over
        return w, size, h, copy

    monkeypatch.setattr(embedded, "_rule_arrays", raised)
    got = topk(prog, db, "path(*, *)", 3, engine="embedded")
    assert max(e.size for es in got.answers().values() for e in es) == 2**31 - 1 + over
    assert bool(got.meta.formed.get("components")) is static
    assert ("size is 2^31 or more" in got.stats_note) is not static
    monkeypatch.setattr(embedded, "FORM_INSTANCES", "global")
    assert got.answers() == topk(prog, db, "path(*, *)", 3, engine="embedded").answers()


def test_child_slots_are_built_from_the_rules_when_read(tmp_path: Path) -> None:
    """The static result carries no child slot pointers (kernel ABI 9): they are built from the
    entries' rules on first read, the same array for the result's ranks and the graph's
    children, with each entry's number of children its rule's (none for a leaf), and ranks as
    uint8 in 1..k."""
    prog, db = _db(tmp_path, SHAPES)
    dt = topk(prog, db, "path(*, *)", 6, engine="embedded")
    assert dt.meta.formed.get("components")
    res, g = dt.res, dt.graph
    ptr = res.child_rank_ptr
    assert ptr is g.child_ptr and ptr is res.child_rank_ptr  # built once
    n = len(res.w)
    assert len(ptr) == n + 1 and ptr[0] == 0 and ptr[-1] == len(res.child_rank) == len(g.child_fact)
    m = np.diff(ptr)
    assert (m[:res.own_leaves] == 0).all() and (m[res.own_leaves:] >= 1).all()
    names = dt.meta.rules
    arity = {"r1": 1, "r2": 2, "r3": 1, "r4": 2, "r5": 2, "r6": 3, "r7": 2}
    assert {arity[names[int(g.inst_rule[e])]] for e in range(res.own_leaves, n)} == set(m[res.own_leaves:].tolist())
    assert all(arity[names[int(g.inst_rule[e])]] == m[e] for e in range(res.own_leaves, n))
    assert res.child_rank.dtype == np.uint8 and 1 <= res.child_rank.min() and res.child_rank.max() <= 6


@pytest.mark.parametrize(("extra", "static"), [(254, True), (255, False)], ids=["256-rules", "257-rules"])
def test_more_rules_than_uint8_take_the_global_path(tmp_path: Path, extra: int, static: bool) -> None:
    """The static path writes an entry's rule as uint8 (kernel ABI 9): a program of 256 rules
    stays component by component, one of 257 takes the global path and says why; both rank as
    the reference engine does."""
    rules = "".join(f"x{i} (0.{i % 9 + 1}): path(x, y) :- edge(x, y), mark(y).\n" for i in range(extra))
    prog, db = _db(tmp_path, RIGHT + rules)
    got = topk(prog, db, "path(*, *)", 2, engine="embedded")
    assert bool(got.meta.formed.get("components")) is static
    assert ("more than 256 rules" in got.stats_note) is not static
    ref = topk(prog, db, "path(*, *)", 2, engine="reference").answers()
    assert ranking(got.answers(), True) == ranking(ref, True)


def test_origins_are_computed_for_the_trees_read(tmp_path: Path, monkeypatch) -> None:
    """The static result carries no origins (kernel ABI 9): one fact's entries get theirs (and
    the entries below them) when its trees are read, not every entry's; they are the global
    path's, and the whole array, read later, agrees with them."""
    prog, db = _db(tmp_path, RIGHT)
    static, whole = _both(monkeypatch, prog, db, "path(*, *)", 3)
    res = static.res
    fid = static.fact_id("path", (10, 11))
    want = [e.origin for e in whole.entries_of(whole.fact_id("path", (10, 11)))]
    assert [e.origin for e in static.entries_of(fid)] == want
    done = res.origins_of.done
    assert done is not None and 0 < int(done[res.own_leaves:].sum()) < len(res.w) - res.own_leaves
    r = res.row_of(fid)
    lo, hi = int(res.fact_ptr[r]), int(res.fact_ptr[r + 1])
    assert res.origin[lo:hi].tolist() == want
    # after the whole array: asking for one fact's (again) gives the same, and the array keeps them
    assert res.origins_of.all and res.origins(lo, hi).tolist() == want and res.origin[lo:hi].tolist() == want
    other = static.fact_id("path", (0, 1))
    r2 = res.row_of(other)
    got = [e.origin for e in static.entries_of(other)]
    assert got == [e.origin for e in whole.entries_of(whole.fact_id("path", (0, 1)))]
    assert res.origin[int(res.fact_ptr[r2]):int(res.fact_ptr[r2 + 1])].tolist() == got
