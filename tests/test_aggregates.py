"""Aggregates (min, max, count, sum), also min/max through recursion: every engine computes the
naive fixpoint extended with aggregates on random programs; located errors through the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from randprog import naive_fixpoint, programs_with_databases
from selp.engines.registry import ENGINES, get_engine
from selp.language import parse_program
from selp.language.validate import analyze

IN_PROCESS = [name for name, e in ENGINES.items() if not e.uses_spark]
ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("engine", IN_PROCESS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=programs_with_databases(aggregates=True))
def test_engine_equals_naive_fixpoint_with_aggregates(engine: str, case) -> None:
    text, db = case
    analysis = analyze(parse_program(text))
    assert get_engine(engine).evaluate(analysis, db) == naive_fixpoint(analysis, db), text


@pytest.mark.spark
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=programs_with_databases(max_idb=2, aggregates=True))
def test_spark_engine_equals_naive_fixpoint_with_aggregates(spark, case) -> None:
    text, db = case
    analysis = analyze(parse_program(text))
    assert get_engine("spark").evaluate(analysis, db, spark=spark) == naive_fixpoint(analysis, db), text
