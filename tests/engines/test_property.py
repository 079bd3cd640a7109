"""Every registered engine computes the naive fixpoint on random programs, from Python facts and
from database files, and agrees with the reference engine on what it prints and writes."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.budget import examples
from helpers.randprog import naive_fixpoint, programs_with_databases
from selp.database import write_relations
from selp.engines.registry import ENGINES, get_engine
from selp.language import parse_program
from selp.language.validate import analyze

IN_PROCESS = [name for name, e in ENGINES.items() if not e.uses_spark]
SETTINGS = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("engine", IN_PROCESS)
@SETTINGS
@given(case=programs_with_databases())
def test_engine_equals_naive_fixpoint_on_python_facts(engine: str, case) -> None:
    text, db = case
    analysis = analyze(parse_program(text))
    assert get_engine(engine).evaluate(analysis, db) == naive_fixpoint(analysis, db)


@pytest.mark.parametrize("engine", IN_PROCESS)
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=programs_with_databases(), fmt=st.sampled_from(["csv", "parquet"]))
def test_engine_reads_files_and_writes_what_the_reference_writes(tmp_path_factory, engine: str, case, fmt: str) -> None:
    """Files in, files out: the same fixpoint, and --out files that read back to the same rows
    in the same order with the same header."""
    text, db = case
    analysis = analyze(parse_program(text))
    decls = {d.relation: d for d in analysis.program.decls}
    d = tmp_path_factory.mktemp("db")
    write_relations(d, db, {r: tuple(t for _, t in decls[r].columns) for r in db},
                    {r: tuple(c for c, _ in decls[r].columns) for r in db}, fmt)
    result = get_engine(engine).run(analysis, d)
    expected = naive_fixpoint(analysis, db)
    assert {rel: result.rows(rel) for rel in result.relations()} == expected
    out, ref_out = tmp_path_factory.mktemp("out"), tmp_path_factory.mktemp("ref")
    result.write(out, "csv")
    get_engine("reference").run(analysis, d).write(ref_out, "csv")
    for rel in sorted(analysis.idb):
        if analysis.arities[rel] == 0:
            continue
        assert _read(out / f"{rel}.csv") == _read(ref_out / f"{rel}.csv"), rel


def _read(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


@pytest.mark.spark
@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=programs_with_databases(max_idb=3))
def test_spark_engine_equals_naive_fixpoint_on_python_facts(spark, case) -> None:
    text, db = case
    analysis = analyze(parse_program(text))
    assert get_engine("spark").evaluate(analysis, db, spark=spark) == naive_fixpoint(analysis, db)
