"""``selp maintain --engine spark``: starting Spark for the distributed form and checking that a
loaded state was built for it (:mod:`selp.maintain.spark`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from selp.errors import SelpError
from selp.language.validate import Analysis


def open_spark(analysis: Analysis, strategy: str, master: str | None, quiet: bool) -> Any:
    """A Spark session (driver memory 2g) once the program and strategy are known to be
    distributable: a refusal costs no JVM start."""
    from selp.engines.spark_session import start_spark
    from selp.maintain.minship import localize

    if strategy != "absorption":
        raise SelpError(f"--engine spark maintains with --strategy absorption only (got {strategy})")
    localize(analysis)
    say = None if quiet else (lambda m: click.echo(m, err=True))
    return start_spark(master, {"spark.driver.memory": "2g"}, say)


def check_loaded(maintainer: Any, path: Path, distributed_form: bool, nodes: int, minship: str, spark: Any) -> None:
    """Refuse a state built for the other form or another number of nodes; a loaded
    distributed state takes this run's MinShip mode and Spark session."""
    from selp.maintain.spark import Distributed

    distributed = isinstance(maintainer, Distributed)
    if distributed != distributed_form:
        built = "with --engine spark" if distributed else "without --engine spark"
        raise SelpError(f"{path}: built {built}; pass the same --engine, or --reset to rebuild it")
    if maintainer.n != nodes:
        raise SelpError(f"{path}: built on {maintainer.n} nodes, not --nodes {nodes}; pass --reset to rebuild it")
    maintainer.minship = minship
    maintainer.use_session(spark)


def shipped(maintainer: Any, before: dict[str, int]) -> dict[str, int]:
    """Rows and bytes shipped between nodes, and rounds, since ``before`` (the totals at load)."""
    return {k: v - before.get(k, 0) for k, v in maintainer.total.items()}
