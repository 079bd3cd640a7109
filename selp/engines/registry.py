"""The engines behind one narrow interface, by name.

Every engine evaluates a program two ways over the same inputs:

* ``run(analysis, db_dir, progress, spark)`` -- a database directory (``REL.csv``/``REL.parquet``
  plus the program's inline facts) to an :class:`~selp.engines.result.EvalResult`;
* ``evaluate(analysis, facts, progress, spark)`` -- EDB facts as Python values to the IDB facts
  as Python sets (what the CDSS layer and the property tests hand over).

Adding an engine is one :class:`Engine` entry in :data:`ENGINES` and its own module. ``local`` is
the earlier name of ``reference`` and still accepted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from selp.errors import SelpError
from selp.language.validate import Analysis
from selp.values import Value

Row = tuple[Value, ...]
DEFAULT = "embedded"
ALIASES = {"local": "reference"}


def _run_reference(analysis: Analysis, db_dir: str | Path | None, progress: Any = None, spark: Any = None) -> Any:
    from selp.engines.result import run_local

    result = run_local(analysis, db_dir, progress)
    result.engine = "reference"
    return result


def _eval_reference(analysis: Analysis, facts: Mapping[str, Iterable[Row]], progress: Any = None, spark: Any = None) -> dict[str, set[Row]]:
    from selp.engines.local import evaluate

    return evaluate(analysis, facts, progress)


def _run_embedded(analysis: Analysis, db_dir: str | Path | None, progress: Any = None, spark: Any = None) -> Any:
    from selp.engines.embedded import run_embedded

    return run_embedded(analysis, db_dir, progress)


def _eval_embedded(analysis: Analysis, facts: Mapping[str, Iterable[Row]], progress: Any = None, spark: Any = None) -> dict[str, set[Row]]:
    from selp.engines.embedded import evaluate

    return evaluate(analysis, facts, progress)


def _run_spark(analysis: Analysis, db_dir: str | Path | None, progress: Any = None, spark: Any = None) -> Any:
    from selp.engines.spark import run_spark

    return run_spark(analysis, db_dir, _session(spark), progress)


def _eval_spark(analysis: Analysis, facts: Mapping[str, Iterable[Row]], progress: Any = None, spark: Any = None) -> dict[str, set[Row]]:
    import tempfile

    from selp.database import column_names, fact_types, write_relations
    from selp.engines.spark import run_spark

    # the Spark engine reads files (on a cluster its executors do): hand the facts over as Parquet
    with tempfile.TemporaryDirectory(prefix="selp-facts-") as d:
        facts = {rel: set(rows) for rel, rows in facts.items() if rel in analysis.edb}
        types = fact_types(analysis, facts)
        columns = {rel: column_names(analysis.program, rel, analysis.arities[rel]) for rel in facts}
        write_relations(d, {r: f for r, f in facts.items() if f}, types, columns, "parquet")
        result = run_spark(analysis, d, _session(spark), progress)
        try:
            return {rel: set(result.rows(rel)) for rel in analysis.idb}
        finally:
            result.close()


def _session(spark: Any) -> Any:
    if spark is not None:
        return spark
    from selp.engines.spark_session import get_spark

    return get_spark()


@dataclass(frozen=True)
class Engine:
    """An evaluation engine."""

    name: str
    description: str
    run: Callable[..., Any]
    evaluate: Callable[..., dict[str, set[Row]]]
    uses_spark: bool = False


ENGINES: dict[str, Engine] = {
    e.name: e
    for e in (
        Engine("embedded", "in-process DuckDB: rules compiled to SQL, semi-naive in set-at-a-time queries (default)",
               _run_embedded, _eval_embedded),
        Engine("spark", "Apache Spark DataFrames, for data beyond one machine (--master for a cluster)",
               _run_spark, _eval_spark, uses_spark=True),
        Engine("reference", "pure-Python semi-naive evaluation with hash indexes: the oracle of the tests",
               _run_reference, _eval_reference),
    )
}


def names(with_aliases: bool = True) -> list[str]:
    """Engine names for ``--engine`` choices."""
    return list(ENGINES) + (list(ALIASES) if with_aliases else [])


def canonical(name: str) -> str:
    """The registered name of ``name`` (aliases resolved); raises on an unknown name."""
    name = ALIASES.get(name, name)
    if name not in ENGINES:
        raise SelpError(f"unknown engine {name!r}; use one of {', '.join(ENGINES)}")
    return name


def get_engine(name: str) -> Engine:
    """The engine registered under ``name`` (or an alias of it)."""
    return ENGINES[canonical(name)]
