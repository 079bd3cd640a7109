"""selp: top-k selective provenance for datalog programs, evaluated locally or on Apache Spark."""

__version__ = "0.1.0"
