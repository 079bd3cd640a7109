"""Evaluation engines, registered by name in :mod:`selp.engines.registry`: ``embedded`` (DuckDB,
the default), ``spark`` (PySpark DataFrames) and ``reference`` (pure Python, the tests' oracle;
formerly ``local``)."""

ENGINES = ("embedded", "spark", "reference", "local")
