"""The Z-relation engines by name: exactly the engines of :mod:`selp.engines.registry`, each of
which makes its own store (:meth:`selp.engines.base.Engine.counting`), so a new engine cannot be
missing here. A store is created on demand: choosing DuckDB never starts a JVM."""

from __future__ import annotations

from typing import Any

from selp.adapt.zprogram import ZEngine
from selp.engines.registry import get_engine, names


def z_engine_names() -> list[str]:
    """The engines a Z-relation store can be asked of (``--engine`` choices, aliases included)."""
    return names()


def z_engine(name: str, spark: Any = None) -> ZEngine:
    """A new, empty Z-relation store on the engine ``name`` (an alias such as ``local`` too),
    on the Spark session ``spark`` when that engine runs on one."""
    return get_engine(name).counting(spark)
