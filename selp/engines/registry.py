"""The engines, by name: one :class:`~selp.engines.base.Engine` instance each.

What an engine implements is :class:`selp.engines.base.Engine` (evaluation, the top-k DTable,
the CDSS exchange steps, ProQL). Adding an engine is one entry in :data:`ENGINES` and its own
module; ``--engine`` choices and :func:`selp.config.choose_engine` read this registry. ``local``
is the earlier name of ``reference`` and still accepted.
"""

from __future__ import annotations

from selp.engines.base import DEFAULT, Engine, Row
from selp.engines.embedded.engine import EmbeddedEngine
from selp.engines.reference import ReferenceEngine
from selp.engines.spark_engine import SparkEngine
from selp.errors import SelpError

__all__ = ["ALIASES", "DEFAULT", "ENGINES", "Engine", "Row", "canonical", "get_engine", "names", "spark_engine_name"]

ALIASES = {"local": "reference"}

ENGINES: dict[str, Engine] = {e.name: e for e in (EmbeddedEngine(), SparkEngine(), ReferenceEngine())}


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


def spark_engine_name() -> str:
    """The registered engine that runs on a Spark session (what ``--master`` asks for)."""
    return next(e.name for e in ENGINES.values() if e.needs_spark_session)
