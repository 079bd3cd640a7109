"""Incremental update exchange on Spark (selp.cdss.incremental_spark): the same answers as full
recomputation with the local engine, on the running example (state computed by the Spark engine)
and on a few derandomised random CDSSs (state handed over as frames)."""

from __future__ import annotations


import pytest

from helpers.incremental import CYCLE, RUNNING, expected_after, full_state, no_trust, null, random_case
from helpers.paths import BIO
from selp.cdss.compile import compile_cdss
from selp.cdss.config import load_cdss, parse_cdss
from selp.cdss.evaluate import evaluate_cdss
from selp.cdss.incremental_spark import apply_changes_spark
from selp.engines.spark_compile import rel_schema
from selp.language.types import resolve_types
from selp.language.validate import analyze
from selp.values import decode, encode

pytestmark = pytest.mark.spark


def to_frame(spark, rows: set, arity: int):
    return spark.createDataFrame([tuple(encode(v) for v in r) for r in rows], rel_schema(arity))


def frames_of(spark, analysis, changes: dict[str, set]):
    return {rel: to_frame(spark, rows, analysis.arities[rel]) for rel, rows in changes.items()}


def collect(frames, analysis, types) -> dict[str, set]:
    return {rel: {tuple(decode(v, t) for v, t in zip(r, types[rel])) for r in df.collect()} for rel, df in frames.items()}


def check(spark, compiled, state, inserts, deletes, strategies=("provenance", "dred", "recompute")):
    analysis = analyze(compiled.program)
    types = resolve_types(analysis)
    expected = expected_after(compiled, state, inserts, deletes)
    frames = frames_of(spark, analysis, state)
    out = {}
    for strategy in strategies:
        new, stats = apply_changes_spark(
            compiled, frames, frames_of(spark, analysis, inserts), frames_of(spark, analysis, deletes), spark, strategy
        )
        got = collect(new, analysis, types)
        assert got == expected, strategy
        out[strategy] = (got, stats)
    return out


def test_running_example_from_the_spark_engine(spark, tmp_path):
    # the state as the Spark engine computed it (its frames, EDB and IDB), then Example 13's
    # deletion of B(3,5) and a new rejection of B(3,2) in one batch
    import shutil

    d = tmp_path / "bio"
    shutil.copytree(BIO, d)
    c = no_trust(load_cdss(d))
    res = evaluate_cdss(c, d / "data", "spark", spark=spark, with_nulls=True)
    try:
        compiled = res.compiled
        analysis = analyze(compiled.program)
        frames = {rel: res.result.frame(rel) for rel in analysis.arities}
        inserts = {"B_r": to_frame(spark, {(3, 2)}, 2)}
        deletes = {"B_l": to_frame(spark, {(3, 5)}, 2)}
        new, stats = apply_changes_spark(compiled, frames, inserts, deletes, spark, "provenance")
        got = collect(new, analysis, resolve_types(analysis))
        state = full_state(compiled, RUNNING)
        assert got == expected_after(compiled, state, {"B_r": {(3, 2)}}, {"B_l": {(3, 5)}})
        # B(3,5) and the rejected B(3,2) go, and B(3,3) (built on B(3,2)) with them
        assert got["B_o"] == {(1, 3)}
        assert got["U_o"] == {(2, 5), (3, 2), (3, null(3))}
        assert stats["deleted"]["B_o"] == 3 and stats["spark_jobs"] > 0
    finally:
        res.close()


def test_mutual_support_on_spark(spark):
    compiled = compile_cdss(parse_cdss(CYCLE))
    state = full_state(compiled, {"B_l": {(1, 2)}, "U_l": {(3, 2), (2, 3)}})
    out = check(spark, compiled, state, {}, {"B_l": {(1, 2)}}, ("provenance",))
    got, stats = out["provenance"]
    assert got["B_o"] == set() and stats["derivability_tests"] >= 1


def test_insertion_and_curation_withdrawal_on_spark(spark):
    compiled = compile_cdss(no_trust(load_cdss(BIO)))
    state = full_state(compiled, {**RUNNING, "B_r": {(3, 2)}})
    out = check(spark, compiled, state, {"G_l": {(4, 5, 6)}}, {"B_r": {(3, 2)}}, ("provenance", "dred"))
    got, _ = out["provenance"]
    assert {(3, 2), (3, 3), (4, 6), (3, 6)} <= got["B_o"]


# few cases: on tiny inputs every step is a Spark job, so these are slow (the local property test
# covers 200 random CDSSs with the same Maintainer)
@pytest.mark.parametrize("seed,strategies", [(3, ("provenance", "dred", "recompute")), (11, ("provenance",))])
def test_random_cdss_on_spark(spark, seed, strategies):
    compiled, state, inserts, deletes = random_case(seed)
    check(spark, compiled, state, inserts, deletes, strategies)
