"""Shared fixtures: one Spark session for the whole test run (starting one takes seconds)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    """A local[2] Spark session shared by every test that asks for it; stopped at the end."""
    from selp.engines.spark_session import get_spark

    session = get_spark("local[2]")
    yield session
    session.stop()
