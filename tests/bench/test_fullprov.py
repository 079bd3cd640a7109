"""The full-provenance baseline gives the answers of selective top-k (same weights per fact)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.paths import TRADE
from selp.bench.datasets import spec
from selp.bench.fullprov import full_provenance, full_provenance_local, materialise_local
from selp.bench.patterns import load_named_patterns
from selp.database import load_database
from selp.engines.local import evaluate
from selp.language import parse_program_file
from selp.language.validate import analyze
from selp.reference.derivations import instantiations
from selp.topk.api import topk



def _weights(table) -> dict:
    """Per answer fact, its k best weights (rounded: products in another order differ in the last bits)."""
    return {f: [round(e.weight, 9) if isinstance(e.weight, float) else e.weight for e in es]
            for f, es in table.answers().items()}


def _generate(name: str, out: Path) -> None:
    if name == "iris":
        from selp.gen.iris import generate_iris

        generate_iris(out, 40, seed=5)
    elif name == "amie":
        from selp.gen.amie import generate_amie

        generate_amie(out, 120, seed=5)
    elif name == "explain":
        from selp.gen.explain import generate_explain

        generate_explain(out, 80, seed=5)
    else:
        from selp.gen.tc import generate_tc

        generate_tc(out, 14, 20, seed=5, components=2)


CASES = [
    ("iris", ["p1", "p2", "p3", "p4"]),
    ("amie", ["p5", "p6", "p7", "p8s", "p9", "n7"]),
    pytest.param("explain", ["p14", "p15", "p16"], marks=pytest.mark.slow),  # 10-20 s per monoid
    ("tc", ["p10", "p11", "p12", "p13"]),
]


@pytest.mark.parametrize("dataset,names", CASES)
@pytest.mark.parametrize("monoid", ["confidence", "size", "cost"])
def test_full_provenance_answers_equal_selective_top_k(tmp_path: Path, dataset: str, names: list[str], monoid: str) -> None:
    _generate(dataset, tmp_path)
    analysis = analyze(parse_program_file(str(spec(dataset).program)))
    db = load_database(analysis, tmp_path)
    hg = materialise_local(analysis, db)  # pattern-independent: materialised once for all queries
    patterns = load_named_patterns(spec(dataset).patterns)
    nonempty = 0
    for name in names:
        text = patterns[name][0]
        expected = _weights(topk(analysis, str(tmp_path), text, k=3, monoid=monoid, engine="local"))
        got = _weights(full_provenance_local(analysis, db, text, k=3, monoid=monoid, hypergraph=hg).table)
        assert got == expected, (dataset, name, monoid)
        nonempty += bool(expected)
    assert nonempty >= len(names) - 1  # the comparison is not vacuous


def test_hypergraph_has_one_hyperedge_per_rule_instance() -> None:
    analysis = analyze(parse_program_file(str(TRADE / "trade.dl")))
    db = load_database(analysis, TRADE / "db")
    hg = materialise_local(analysis, db)
    idb = evaluate(analysis, db.facts)
    expected = {(i.rule.name, (i.rule.head.relation, i.head), i.body) for i in instantiations(analysis, {**db.facts, **idb})}
    edges = list(hg.hyperedges())
    assert len(edges) == hg.size == len(expected) > 0
    assert set(edges) == expected
    assert hg.idb_tuples == sum(len(v) for v in idb.values())


def test_example_3_11_through_full_provenance() -> None:
    table = full_provenance(str(TRADE / "trade.dl"), str(TRADE / "db"), "dealsWith(Cuba, *) // exports(Cuba, tobacco)", k=2)
    assert [round(e.weight, 2) for e in table.answers()[("dealsWith", ("Cuba", "France"))]] == [0.4, 0.28]


@pytest.mark.spark
def test_full_provenance_on_spark_equals_local_top_k(spark, tmp_path: Path) -> None:
    _generate("tc", tmp_path / "db")
    program = str(spec("tc").program)
    for text in ("tc(*, *)[/ tc(*, *), / edge(*, *)]", "tc // tc // edge"):
        expected = _weights(topk(program, str(tmp_path / "db"), text, k=3, engine="local"))
        got = _weights(full_provenance(program, str(tmp_path / "db"), text, k=3, engine="spark", spark=spark,
                                       work_dir=tmp_path / "hg"))
        assert got == expected and expected
