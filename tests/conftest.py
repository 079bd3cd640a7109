"""Shared fixtures: one Spark session for the whole test run (starting one takes seconds), the
bio example's store built once; the ``spark`` marker set automatically; hypothesis profiles.

Under CI (``CI=true``) hypothesis is derandomized: every CI run draws the same examples, so a
green run here is a green run there, and a failure reproduces.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
# fast: the fast suite's examples (helpers.budget.examples scales each test's own count by it);
# thorough: every test's full count (CI's second stage: --hypothesis-profile=thorough)
settings.register_profile("fast", max_examples=25, derandomize=_CI, print_blob=_CI)
settings.register_profile("thorough", max_examples=100, derandomize=_CI, print_blob=_CI)
settings.load_profile("fast")


@pytest.fixture(scope="session")
def spark():
    """A local[2] Spark session shared by every test that asks for it; stopped at the end."""
    from selp.engines.spark_session import get_spark

    session = get_spark("local[2]")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def bio_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bio example with a store after the README's walkthrough, built once per run:
    read-only, a test that changes it works on a copy (``shutil.copytree``)."""
    from helpers.cdss import build_bio_store

    return build_bio_store(tmp_path_factory.mktemp("bio-store") / "bio")


def pytest_collection_modifyitems(config, items) -> None:
    """Every test that uses the Spark session is a ``spark`` test, so ``-m "not spark"`` never
    starts a JVM (a forgotten marker cannot slip a Spark test into the fast suite)."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
    # the fast suite first, the Spark suite second: a broken change fails in minutes, not after
    # the JVM's share of the run
    items.sort(key=lambda item: item.get_closest_marker("spark") is not None)
