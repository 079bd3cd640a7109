"""The embedded DTable (DuckDB facts and instances, compiled kernel) ranks like the reference DTable,
and goal-directed evaluation returns exactly what full evaluation returns for the facts asked."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.budget import examples
from helpers.randprog import programs_with_databases
from helpers.topk import checked_case, drawn_goal, ranking
from selp.language import parse_program
from selp.language.pattern import TreePattern
from selp.language.validate import analyze
from selp.topk import embedded
from selp.topk.api import parse_fact_filter, topk
from selp.topk.trees import answers, render_text

SETTINGS = settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much])


def _case(tmp_path_factory, case, data):
    analysis, db_dir, monoid, pattern = checked_case(tmp_path_factory, case, data)
    return analysis, str(db_dir), monoid, pattern


@SETTINGS
@given(programs_with_databases(max_idb=3), st.data())
def test_embedded_and_reference_rank_alike(tmp_path_factory, case, data) -> None:
    analysis, db_dir, monoid, pattern = _case(tmp_path_factory, case, data)
    k = data.draw(st.integers(1, 4))
    sizes = monoid not in ("min-confidence", "access")  # min is not strictly monotone (see topk/local.py)
    ref = ranking(topk(analysis, db_dir, pattern, k, monoid, engine="reference").answers(), sizes)
    emb = ranking(topk(analysis, db_dir, pattern, k, monoid, engine="embedded").answers(), sizes)
    assert emb == ref


@SETTINGS
@given(programs_with_databases(max_idb=3), st.data())
def test_goal_directed_explain_returns_what_full_evaluation_returns(tmp_path_factory, case, data) -> None:
    analysis, db_dir, monoid, pattern = _case(tmp_path_factory, case, data)
    k = data.draw(st.integers(1, 4))
    full = topk(analysis, db_dir, pattern, k, monoid, engine="embedded", goal_directed=False)
    node = drawn_goal(data, full)
    if node is None:
        return
    expect = {key: v for key, v in full.answers().items() if node.matches_fact(*key)}
    got_table = topk(analysis, db_dir, pattern, k, monoid, engine="embedded", fact=node)
    got = {key: v for key, v in got_table.answers().items() if node.matches_fact(*key)}
    exact = lambda a: {f: [(e.weight, e.size, e.origin) for e in es] for f, es in a.items()}  # noqa: E731
    assert exact(got) == exact(expect)


def test_explain_one_tc_fact_is_goal_directed_and_exact(tmp_path: Path) -> None:
    """On a chain with a side branch, explaining path(0, 3) computes only the demanded cone and
    gives the same three trees as evaluating everything."""
    (tmp_path / "edge.csv").write_text("c1,c2,_weight\n0,1,0.9\n1,2,0.8\n2,3,0.7\n0,2,0.5\n1,3,0.6\n3,4,0.9\n5,0,0.9\n", encoding="utf-8")
    prog = tmp_path / "tc.dl"
    prog.write_text("r1 (0.9): path(x, y) :- edge(x, y).\nr2 (0.8): path(x, z) :- edge(x, y), path(y, z).\n", encoding="utf-8")
    node = parse_fact_filter("path(0, 3)")
    analysis = analyze(parse_program(prog.read_text()))
    goal = topk(analysis, str(tmp_path), TreePattern(node), 3, engine="embedded")
    full = topk(analysis, str(tmp_path), TreePattern(node), 3, engine="embedded", goal_directed=False)
    ref = topk(analysis, str(tmp_path), TreePattern(node), 3, engine="reference")
    assert render_text(answers(goal, node)) == render_text(answers(full, node)) == render_text(answers(ref, node))
    weights = [w for w, _ in answers(goal, node)[0].trees]
    # 0->1->2->3, 0->1->3, 0->2->3: products of rule and edge weights, best first
    assert weights == pytest.approx(sorted([0.8 * 0.9 * 0.8 * 0.8 * 0.9 * 0.7, 0.8 * 0.9 * 0.9 * 0.6, 0.8 * 0.5 * 0.9 * 0.7], reverse=True))
    # the demand restricts path to facts ending in 3: path(5, 3) and path(x, 4) are never built
    assert goal.count_facts("path") < full.count_facts("path")


@pytest.mark.parametrize("monoid", ["confidence", "cost", "access", "size"])
def test_fact_weights_are_read_as_the_reference_reads_them(tmp_path: Path, monoid: str) -> None:
    """Weights are cast in SQL for numeric monoids and parsed per distinct text otherwise; both
    must read every spelling the reference engine reads (blank = the monoid's one)."""
    (tmp_path / "db").mkdir()
    w1, w2 = ("S", "C") if monoid == "access" else ("0.9", "0.8")
    (tmp_path / "p.dl").write_text(f"r1 ({w1}): path(x, y) :- edge(x, y).\nr2 ({w2}): path(x, z) :- edge(x, y), path(y, z).\n")
    weights = {"access": ["S", " c", "", "U", "t"]}.get(monoid, ["0.5", " 0.25 ", "", "1e-1", ".75"])
    rows = [f"{i},{i + 1},{w}" for i, w in enumerate(weights)] + ["0,2,0.5" if monoid != "access" else "0,2,C"]
    (tmp_path / "db" / "edge.csv").write_text("c1,c2,_weight\n" + "\n".join(rows) + "\n")
    got = {e: topk(str(tmp_path / "p.dl"), str(tmp_path / "db"), "path(*, *)", 3, monoid, engine=e).answers() for e in ("embedded", "reference")}
    assert ranking(got["embedded"], True) == ranking(got["reference"], True)
    assert len(got["embedded"]) == 15


def test_a_bad_fact_weight_is_one_line_naming_the_fact(tmp_path: Path) -> None:
    from selp.errors import SelpError

    (tmp_path / "db").mkdir()
    (tmp_path / "p.dl").write_text("r1 (0.9): path(x, y) :- edge(x, y).\n")
    (tmp_path / "db" / "edge.csv").write_text("c1,c2,_weight\n1,2,0.5\n2,3,1.5\n")
    with pytest.raises(SelpError, match=r"^edge\(2, 3\): weight '1.5' is not valid for monoid confidence"):
        topk(str(tmp_path / "p.dl"), str(tmp_path / "db"), "path(*, *)", 1, engine="embedded")


@pytest.mark.parametrize("rules", [
    # linear: path(*, z) for one z is a component of the kernel
    "r1 (0.5): path(x, y) :- edge(x, y).\nr2 (0.5): path(x, z) :- edge(x, y), path(y, z).\n",
    # non-linear: components merge (the kernel's loop is then mostly global)
    "r1 (0.5): path(x, y) :- edge(x, y).\nr2 (0.5): path(x, z) :- path(x, y), path(y, z).\n",
])
@pytest.mark.parametrize(("k", "pattern"), [
    (1, "path(*, *)"), (3, "path(*, *)"), (4, "path(*, *) // edge(0, *)"), (2, "path(*, *) // edge(*, 3)"),
])
def test_component_by_component_kernel_ranks_as_the_reference(tmp_path: Path, monkeypatch, rules: str, k: int,
                                                              pattern: str) -> None:
    """Two disjoint cyclic graphs, every weight equal (ties everywhere, broken by size and
    origin), k > 1, and patterns whose instrumentation derives one tree of P twice (same-origin
    deduplication): the compiled kernel, run component by component, gives the reference
    engine's weights, sizes and order, and exactly the entries (origins too) of the kernel's
    pure-Python twin, which runs one global loop."""
    edges = [(0, 1), (1, 2), (2, 0), (1, 3), (3, 1), (2, 3), (10, 11), (11, 12), (12, 10), (11, 10)]
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "edge.csv").write_text("c1,c2,_weight\n" + "".join(f"{a},{b},0.5\n" for a, b in edges), encoding="utf-8")
    (tmp_path / "p.dl").write_text(rules, encoding="utf-8")
    got = {e: topk(str(tmp_path / "p.dl"), str(tmp_path / "db"), pattern, k, engine=e).answers() for e in ("embedded", "reference")}
    assert got["embedded"] and ranking(got["embedded"], True) == ranking(got["reference"], True)
    exact = lambda a: {f: [(e.weight, e.size, e.origin, e.rule, e.children) for e in es] for f, es in a.items()}  # noqa: E731
    monkeypatch.setattr(embedded, "run_kernel", functools.partial(embedded.run_kernel, backend="python"))
    twin = topk(str(tmp_path / "p.dl"), str(tmp_path / "db"), pattern, k, engine="embedded").answers()
    assert exact(twin) == exact(got["embedded"])
