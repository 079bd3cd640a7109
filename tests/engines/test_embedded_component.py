"""One component's fixpoint in DuckDB over Arrow tables in the uniform encoding -- what each Spark
task runs for a partition of a decomposable component -- equals the reference engine's, labeled
nulls included, and split into partitions it adds up to the same facts and the same rounds."""

from __future__ import annotations

import pyarrow as pa

from selp.engines.decompose import Decomposition, decompose
from selp.engines.embedded.component import ComponentTask, run_component
from selp.engines.local import evaluate
from selp.language import parse_program
from selp.language.validate import analyze
from selp.values import Skolem, decode, encode

PROGRAM = """
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z), not blocked(z).
lab(x, f(x, y)) :- tc(x, y), x < y.
lab(x, w) :- lab(x, y), link(y, w).
"""


def table(rows, arity: int) -> pa.Table:
    return pa.table({f"c{i}": pa.array([encode(r[i]) for r in rows], pa.string()) for i in range(arity)})


def decoded(tbl: pa.Table, types) -> set:
    cols = [tbl.column(f"c{i}").to_pylist() for i in range(tbl.num_columns)]
    return {tuple(decode(v, t) for v, t in zip(row, types)) for row in zip(*cols)}


def setup():
    analysis = analyze(parse_program(PROGRAM, "prog.dl"))
    edge = {(1, 2), (2, 3), (3, 1), (3, 4), (4, 5)}
    blocked = {(5,)}
    # a labeled null in the input reaches lab's second column through link
    link = {(Skolem("f", (1, 3)), Skolem("g", ("a\"b",))), (Skolem("g", ("a\"b",)), 7)}
    facts = {"edge": edge, "blocked": blocked, "link": link}
    expected = evaluate(analysis, facts)
    types = {"edge": ("int", "int"), "blocked": ("int",), "tc": ("int", "int"), "lab": ("int", "int"), "link": ("int", "int")}
    return analysis, facts, expected, types


def task_for(analysis, rel: str, types) -> tuple[ComponentTask, Decomposition]:
    comp = next(c for c in analysis.components if rel in c.relations)
    d = decompose(comp)
    assert isinstance(d, Decomposition)
    inputs = set(comp.relations) | set(d.keyed) | set(d.broadcast)
    return ComponentTask(comp.relations, d.recursive_rules, {r: analysis.arities[r] for r in inputs}, {r: types[r] for r in inputs}), d


def test_a_component_from_its_seeds_equals_the_reference_engine():
    analysis, facts, expected, types = setup()
    task, d = task_for(analysis, "tc", types)
    assert d.position == 0 and d.broadcast == ("blocked", "edge")
    out = run_component(task, {"tc": table(facts["edge"], 2)}, {"edge": table(facts["edge"], 2), "blocked": table(facts["blocked"], 1)})
    assert decoded(out.facts["tc"], types["tc"]) == expected["tc"]
    assert sum(out.rounds) == len(expected["tc"])
    assert out.rounds[0] == len(facts["edge"])


def test_labeled_nulls_in_seeds_and_inputs_come_back_in_the_same_encoding():
    analysis, facts, expected, types = setup()
    task, _ = task_for(analysis, "lab", types)
    seeds = {(x, Skolem("f", (x, y))) for x, y in expected["tc"] if x < y}
    out = run_component(task, {"lab": table(seeds, 2)}, {"link": table(facts["link"], 2)})
    assert decoded(out.facts["lab"], types["lab"]) == expected["lab"]
    assert Skolem("g", ('a"b',)) in {w for _, w in expected["lab"]}


def test_partitions_are_disjoint_and_their_rounds_add_up_to_the_global_rounds():
    analysis, facts, expected, types = setup()
    task, _ = task_for(analysis, "tc", types)
    inputs = {"edge": table(facts["edge"], 2), "blocked": table(facts["blocked"], 1)}
    global_rounds = []
    evaluate(
        analysis, facts, lambda c, i, delta, total: global_rounds.append(delta) if "tc" in c.relations and delta else None
    )
    parts = [run_component(task, {"tc": table({e for e in facts["edge"] if e[0] % 2 == k}, 2)}, inputs) for k in (0, 1)]
    split = [decoded(p.facts["tc"], types["tc"]) for p in parts]
    assert not (split[0] & split[1]) and split[0] | split[1] == expected["tc"]
    width = max(len(p.rounds) for p in parts)
    summed = [sum(p.rounds[i] for p in parts if i < len(p.rounds)) for i in range(width)]
    assert summed == global_rounds


def test_a_partition_without_seeds_derives_nothing():
    analysis, facts, _, types = setup()
    task, _ = task_for(analysis, "tc", types)
    out = run_component(task, {}, {"edge": table(facts["edge"], 2)})
    assert out.facts["tc"].num_rows == 0 and out.rounds == []
