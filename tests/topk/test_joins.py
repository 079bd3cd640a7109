"""Rule instances formed by the compiled kernel's join (selp.topk.joins) against DuckDB's join
and the reference engine: same entries, whatever the rule's shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.topk import edge_db, embedded_both_ways, ranking
from selp.language import parse_program
from selp.language.validate import analyze
from selp.topk import embedded
from selp.topk.api import parse_fact_filter, topk
from selp.topk.joins import plan
from selp.topk.kernel import compiled_available

pytestmark = pytest.mark.skipif(not compiled_available(), reason="the C kernel was not built")

# every weight equal: ties everywhere, broken by size and origin
EDGES = [(0, 1), (1, 2), (2, 0), (1, 3), (3, 1), (2, 3), (3, 3), (10, 11), (11, 12), (12, 10), (11, 10), (0, 10)]

TC = "r1 (0.5): path(x, y) :- edge(x, y).\nr2 (0.5): path(x, z) :- edge(x, y), path(y, z).\n"
NONLINEAR = "r1 (0.5): path(x, y) :- edge(x, y).\nr2 (0.5): path(x, z) :- path(x, y), path(y, z).\n"
SHAPES = TC + (
    "r3 (0.5): loop(x) :- path(x, x).\n"  # a repeated variable
    "r4 (0.5): from0(y) :- path(0, y).\n"  # a constant in the body
    "r5 (0.5): hub(x, 1) :- edge(x, 1), edge(1, x).\n"  # constants in head and body, a variable twice
    "r6 (0.5): three(x, w) :- edge(x, y), edge(y, z), edge(z, w).\n"  # three atoms
    "r7 (0.5): pair(x, y) :- from0(x), loop(y).\n"  # no shared variable: a cross product
    "r8 (0.5): self(x) :- edge(x, y), edge(y, x), loop(x).\n"  # a cycle of three atoms
    "r9 (0.5): src(x) :- edge(x, _), edge(_, x).\n"  # anonymous variables
)
MIXED = TC + "r3 (0.5): up(x, y) :- path(x, y), x < y.\nr4 (0.5): back(x) :- up(x, y), not edge(y, x).\n"


def _db(tmp_path: Path, program: str) -> tuple[str, str]:
    return edge_db(tmp_path, EDGES, program)


def _both(monkeypatch, prog: str, db: str, pattern: str, k: int, **kw) -> tuple:
    """The DTable with instances formed by the kernel's join (the default) and by DuckDB."""
    return embedded_both_ways(monkeypatch, embedded, "sql", prog, db, pattern, k, **kw)


def _exact(answers: dict) -> dict:
    return {f: [(e.weight, e.size, e.origin) for e in es] for f, es in answers.items()}


@pytest.mark.parametrize("program", [TC, NONLINEAR, SHAPES], ids=["tc", "nonlinear", "shapes"])
@pytest.mark.parametrize(("k", "pattern"), [(1, "*"), (3, "*"), (4, "path(*, *) // edge(0, *)"), (2, "path(*, *) // edge(*, 3)")])
def test_kernel_join_gives_duckdbs_entries_and_the_reference_ranking(tmp_path: Path, monkeypatch, program: str, k: int,
                                                                    pattern: str) -> None:
    """Linear (one component per target) and non-linear recursion, constants, repeated
    variables, three-atom bodies, cross products; k = 1 and k > 1 with ties everywhere; patterns
    whose instrumentation derives one tree of P twice (same-origin deduplication): every rule's
    instances are formed by the kernel's join and give exactly the entries that DuckDB's
    instances give, and the reference engine's ranking."""
    prog, db = _db(tmp_path, program)
    auto, sql = _both(monkeypatch, prog, db, pattern, k)
    assert auto.meta.formed["sql"] == 0 and auto.meta.formed["kernel"] >= 2
    assert sql.meta.formed == {"kernel": 0, "sql": auto.meta.formed["kernel"]}
    got = auto.answers()
    assert got and _exact(got) == _exact(sql.answers())
    ref = topk(prog, db, pattern, k, engine="reference").answers()
    assert ranking(got, True) == ranking(ref, True)


def test_rules_the_join_cannot_form_keep_the_sql_join(tmp_path: Path, monkeypatch) -> None:
    """A comparison and a negation keep their rules on DuckDB's join, the other rules of the
    same program take the kernel's: the answers are the reference engine's."""
    prog, db = _db(tmp_path, MIXED)
    auto, sql = _both(monkeypatch, prog, db, "*", 3)
    assert auto.meta.formed["sql"] == 2 and auto.meta.formed["kernel"] >= 2
    assert _exact(auto.answers()) == _exact(sql.answers())
    ref = topk(prog, db, "*", 3, engine="reference").answers()
    assert ranking(auto.answers(), True) == ranking(ref, True) and any(f[0] == "back" for f in ref)


def test_string_values_are_joined_through_one_dictionary(tmp_path: Path, monkeypatch) -> None:
    """String columns are dictionary-encoded (one code per distinct string across relations),
    string constants in the body and in the head included."""
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "knows.csv").write_text(
        "c1,c2,_weight\nann,bob,0.9\nbob,cid,0.8\ncid,ann,0.7\nbob,ann,0.6\ncid,dan,0.5\n", encoding="utf-8")
    (tmp_path / "db" / "city.csv").write_text("c1,c2,_weight\nann,paris,1\nbob,rome,0.9\ndan,paris,0.8\n", encoding="utf-8")
    (tmp_path / "p.dl").write_text(
        "r1 (0.9): reach(x, y) :- knows(x, y).\n"
        "r2 (0.8): reach(x, z) :- knows(x, y), reach(y, z).\n"
        "r3 (0.7): met(x, c) :- reach(x, y), city(y, c), city(x, c).\n"
        "r4 (0.6): parisian(x, \"yes\") :- city(x, \"paris\").\n"
        "r5 (0.5): fan(x) :- reach(x, \"ann\"), parisian(\"ann\", \"yes\").\n", encoding="utf-8")
    prog, db = str(tmp_path / "p.dl"), str(tmp_path / "db")
    auto, sql = _both(monkeypatch, prog, db, "*", 3)
    assert auto.meta.formed["sql"] == 0 and auto.meta.formed["kernel"] >= 5
    assert _exact(auto.answers()) == _exact(sql.answers())
    ref = topk(prog, db, "*", 3, engine="reference").answers()
    assert ranking(auto.answers(), True) == ranking(ref, True)
    assert ("fan", ("bob",)) in ref and ("met", ("ann", "paris")) in ref


def test_demand_atoms_join_but_are_no_children(tmp_path: Path, monkeypatch) -> None:
    """Goal-directed explain: the demand rewriting adds filter atoms to the bodies; the kernel's
    join filters by them and the trees are those of full evaluation."""
    prog, db = _db(tmp_path, TC)
    node = parse_fact_filter("path(0, 3)")
    auto, sql = _both(monkeypatch, prog, db, "*", 3, fact=node)
    assert auto.meta.formed["sql"] == 0
    full = topk(prog, db, "*", 3, engine="embedded", goal_directed=False).answers()
    want = {f: es for f, es in full.items() if node.matches_fact(*f)}
    got = {f: es for f, es in auto.answers().items() if node.matches_fact(*f)}
    assert got and _exact(got) == _exact(want) == _exact({f: es for f, es in sql.answers().items() if node.matches_fact(*f)})
    assert auto.count_facts("path") < len([f for f in full if f[0] == "path"])


def test_which_rules_the_join_plans() -> None:
    """Positive atoms over variables and constants are planned; arithmetic, comparisons and
    negation are not."""
    program = parse_program(MIXED + "r5 (0.5): next(x, y + 1) :- edge(x, y).\n")
    analysis = analyze(program)
    from selp.engines.embedded.physical import column_kinds

    kinds = column_kinds(analysis, {r: ("int",) * n for r, n in analysis.arities.items()})
    planned = {r.name: plan(r, kinds, lambda rel: False) is not None for r in program.rules}
    assert planned == {"r1": True, "r2": True, "r3": False, "r4": False, "r5": False}


def test_a_head_constant_leaves_the_connection_usable():
    """Coding a rule's constants must finish each query it runs: DuckDB refuses further relation
    queries on a connection with an unfinished result (a Spark partition with a rule such as
    ``p0(1, y) :- p0(x, y)`` failed there, reading its facts' arguments afterwards)."""
    from selp.engines.embedded.physical import Kind
    from selp.engines.embedded.store import close, connect
    from selp.language.ast import Const
    from selp.topk.joins import Former

    con = connect()
    try:
        con.execute("CREATE TABLE t AS SELECT 1 AS a")
        former = Former(con, {}, lambda rel: (rel, False))
        assert former._const(Const(7), Kind("int", False)) == 7
        assert con.sql("SELECT a FROM t").to_arrow_table().num_rows == 1
    finally:
        close(con)
