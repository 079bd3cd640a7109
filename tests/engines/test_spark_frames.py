"""The shared DataFrame helpers of the Spark evaluations (:mod:`selp.engines.spark_frames`)."""

from __future__ import annotations

from selp.values import Skolem, encode


def _is_cut(df) -> bool:
    """Whether the frame's plan is a scan of checkpointed blocks (its lineage is gone)."""
    return df._jdf.logicalPlan().getClass().getSimpleName() == "LogicalRDD"


def test_encoded_frame_and_cuts(spark) -> None:
    from selp.engines.spark_frames import cut, encoded_frame, materialize, materialize_count, release

    rows = {("a", 1), (Skolem("f", ("a",)), 2)}
    df = encoded_frame(spark, rows, 2)
    assert df.columns == ["c0", "c1"]
    assert {tuple(r) for r in df.collect()} == {tuple(encode(v) for v in r) for r in rows}

    wide = df.union(df)
    for out in (cut(wide), cut(wide, eager=True), materialize(wide)):
        assert _is_cut(out) and out.count() == 4
    out, n = materialize_count(wide.distinct())
    assert n == 2 and _is_cut(out)
    release(out)
    release(df)  # not a checkpoint: nothing to release, no error
