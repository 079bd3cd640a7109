"""Evaluation engines behind one interface (:mod:`selp.engines.base`), registered by name in
:mod:`selp.engines.registry`: ``embedded`` (DuckDB, the default), ``spark`` (PySpark DataFrames)
and ``reference`` (pure Python, the tests' oracle; formerly ``local``)."""
