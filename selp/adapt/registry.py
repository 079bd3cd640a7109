"""The Z-relation engines by name (the names of :mod:`selp.engines.registry`), each created
lazily so that choosing DuckDB never starts a JVM."""

from __future__ import annotations

from typing import Callable

from selp.adapt.zprogram import ZEngine


def _embedded() -> ZEngine:
    from selp.adapt.zduck import DuckZ

    return DuckZ()


def _reference() -> ZEngine:
    from selp.adapt.zref import ReferenceZ

    return ReferenceZ()


def _spark() -> ZEngine:
    from selp.adapt.zspark import SparkZ
    from selp.engines.spark_session import get_spark

    return SparkZ(get_spark())


Z_ENGINES: dict[str, Callable[[], ZEngine]] = {"embedded": _embedded, "reference": _reference, "spark": _spark}


def z_engine(name: str) -> ZEngine:
    """A new, empty Z-relation store on the engine ``name``."""
    return Z_ENGINES[name]()
