"""The local and the Spark DTable give the same rankings (weights and tree sizes) on random cases."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.budget import examples
from helpers.randprog import programs_with_databases
from helpers.topk import ranking, weighted_case, write_db
from selp.database import load_database
from selp.language import parse_program
from selp.language.validate import analyze
from selp.topk.local import run_topk_local
from selp.topk.monoid import get_monoid
from selp.topk.spark import run_topk_spark
from selp.topk.task import make_task


_SETTINGS = settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@_SETTINGS
@given(programs_with_databases(max_idb=2), st.data())
def test_local_and_spark_rank_alike(spark, tmp_path_factory, case, data) -> None:
    _rank_alike(spark, tmp_path_factory, case, data)


@settings(_SETTINGS, max_examples=examples(6))
@given(programs_with_databases(max_idb=1, aggregates=True), st.data())
def test_local_and_spark_rank_aggregated_facts_alike(spark, tmp_path_factory, case, data) -> None:
    """Aggregates and min/max recursions: both DTables rank the same witness trees."""
    _rank_alike(spark, tmp_path_factory, case, data)


def _rank_alike(spark, tmp_path_factory, case, data) -> None:
    analysis, db_dir, monoid, pattern = weighted_case(tmp_path_factory, case, data)
    db = load_database(analysis, db_dir)
    task = make_task(analysis, db.types, get_monoid(monoid), data.draw(st.integers(1, 3)), pattern)
    # min is not strictly monotone: equally weighted trees may differ in size between algorithms
    sizes = monoid not in ("min-confidence", "access")
    local = ranking(run_topk_local(task, db).answers(), sizes)
    result = run_topk_spark(task, str(db_dir), spark)
    try:
        remote = ranking(result.to_dtable().answers(), sizes)
    finally:
        result.close()
    assert remote == local


MULTI = """
.decl link(c1: int, c2: int, c3: int)
route(s, d, min(c), min(h)) :- link(s, d, c), h = 1.
route(s, d, min(c), min(h)) :- route(s, z, c1, h1), link(z, d, w), c = c1 + w, h = h1 + 1.
span(x, min(w), max(w)) :- link(x, _, w).
"""


@pytest.mark.spark
@pytest.mark.parametrize("seed", range(2))
def test_spark_gives_an_instance_reaching_both_min_max_values_one_tree(spark, tmp_path, seed: int) -> None:
    """Two min/max aggregates in a head, many instances reaching both values (few weights): the
    Spark DTable ranks the witness trees like the local one, each tree once."""
    rng = random.Random(seed)
    links = {(rng.randrange(4), rng.randrange(4), rng.randint(1, 2)) for _ in range(6)}
    analysis = analyze(parse_program(MULTI))
    write_db(tmp_path, analysis, {"link": links}, {})
    db = load_database(analysis, tmp_path)
    task = make_task(analysis, db.types, get_monoid("size"), 3)
    local = ranking(run_topk_local(task, db).answers(), True)
    result = run_topk_spark(task, str(tmp_path), spark)
    try:
        assert ranking(result.to_dtable().answers(), True) == local
    finally:
        result.close()
    # a span fact has one tree per link of its node reaching the least or the greatest weight
    for x in {a for a, _, _ in links}:
        ws = [w for a, _, w in links if a == x]
        assert len(local[("span", (x, min(ws), max(ws)))]) == min(3, sum(w in (min(ws), max(ws)) for w in ws))
