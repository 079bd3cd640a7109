"""The local and the Spark DTable give the same rankings (weights and tree sizes) on random cases."""

from __future__ import annotations


from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.budget import examples
from helpers.randprog import programs_with_databases
from helpers.topk import ranking, weighted_case
from selp.database import load_database
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
