"""The local and the Spark DTable give the same rankings (weights and tree sizes) on random cases."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from randprog import programs_with_databases
from selp.database import load_database
from selp.language import parse_program
from selp.language.printer import format_program
from selp.language.validate import analyze
from selp.topk.local import run_topk_local
from selp.topk.monoid import get_monoid
from selp.topk.spark import run_topk_spark
from selp.topk.task import make_task
from selp.values import format_value
from test_instrument import _patterns
from test_topk_local import FACT_WEIGHTS, RULE_WEIGHTS


def _ranking(answers: dict, sizes: bool) -> dict:
    """Weights (and tree sizes, which are exact for strictly monotone monoids) per fact."""
    return {
        fact: [(round(e.weight, 9) if isinstance(e.weight, float) else e.weight, e.size if sizes else None) for e in entries]
        for fact, entries in answers.items()
    }


def _write_db(db_dir: Path, analysis, edb: dict, weights: dict) -> None:
    for rel in sorted(analysis.edb):
        with open(db_dir / f"{rel}.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow([f"c{i + 1}" for i in range(analysis.arities[rel])] + ["_weight"])
            for fact in sorted(edb.get(rel, ()), key=repr):
                w.writerow([format_value(v) if not isinstance(v, str) else v for v in fact] + [weights.get(rel, {}).get(fact, "")])


def weighted_case(tmp_path_factory, case, data) -> tuple:
    """A random program with drawn rule and fact weights for a drawn monoid, its database written
    to files, and a drawn pattern (or None): (analysis, db_dir, monoid, pattern)."""
    text, edb = case
    monoid = data.draw(st.sampled_from(sorted(RULE_WEIGHTS)))
    program = parse_program(text)
    rules = tuple(dataclasses.replace(r, weight=data.draw(st.sampled_from(RULE_WEIGHTS[monoid])), named=True) for r in program.rules)
    analysis = analyze(parse_program(format_program(dataclasses.replace(program, rules=rules))))
    weights = {rel: {f: data.draw(st.sampled_from(FACT_WEIGHTS[monoid])) for f in sorted(facts, key=repr)} for rel, facts in edb.items()}
    weights = {rel: {f: w for f, w in ws.items() if w is not None} for rel, ws in weights.items()}
    db_dir = tmp_path_factory.mktemp("db")
    _write_db(db_dir, analysis, edb, weights)
    constants = sorted({v for facts in edb.values() for f in facts for v in f}, key=repr)[:6]
    pattern = data.draw(st.none() | _patterns(analysis.arities, constants, sorted(analysis.idb)))
    return analysis, db_dir, monoid, pattern


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(programs_with_databases(max_idb=2), st.data())
def test_local_and_spark_rank_alike(spark, tmp_path_factory, case, data) -> None:
    analysis, db_dir, monoid, pattern = weighted_case(tmp_path_factory, case, data)
    db = load_database(analysis, db_dir)
    task = make_task(analysis, db.types, get_monoid(monoid), data.draw(st.integers(1, 3)), pattern)
    # min is not strictly monotone: equally weighted trees may differ in size between algorithms
    sizes = monoid not in ("min-confidence", "access")
    local = _ranking(run_topk_local(task, db).answers(), sizes)
    result = run_topk_spark(task, str(db_dir), spark)
    try:
        remote = _ranking(result.to_dtable().answers(), sizes)
    finally:
        result.close()
    assert remote == local
