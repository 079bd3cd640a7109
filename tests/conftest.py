"""Shared fixtures: one Spark session for the whole test run (starting one takes seconds).

Under CI (``CI=true``) hypothesis is derandomized: every CI run draws the same examples, so a
green run here is a green run there, and a failure reproduces.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def spark():
    """A local[2] Spark session shared by every test that asks for it; stopped at the end."""
    from selp.engines.spark_session import get_spark

    session = get_spark("local[2]")
    yield session
    session.stop()
