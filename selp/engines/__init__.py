"""Evaluation engines: ``local`` (in-process semi-naive) and ``spark`` (PySpark DataFrames)."""

ENGINES = ("local", "spark")
