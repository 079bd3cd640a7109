"""Deterministic generators of the benchmark datasets (see datasets/README.md)."""
