"""Compute every relation of a compiled CDSS from scratch: the one path shared by
``selp cdss eval`` (:mod:`selp.cdss.evaluate`) and the ``recompute`` exchange
(:mod:`selp.cdss.exchange_steps`).

The base data (``R_l``, ``R_r``, and ``R_x`` when a peer has a ranked-trust threshold) reach the
engine as Python facts (:meth:`selp.engines.base.Engine.compute`): no temporary files on the
in-process engines (Spark writes Parquet for its executors inside its own ``compute``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from selp.cdss.compile import CompiledCDSS, thresholded_peers
from selp.cdss.store import Row
from selp.language.validate import analyze


def add_threshold_rejections(eng: Any, compiled: CompiledCDSS, base: dict[str, set[Row]], spark: Any = None) -> int | None:
    """Add ``R_x`` (imports above their owner's ranked-trust threshold, computed by ``eng``) to
    ``base``; the number of such tuples, or None when no peer has a threshold."""
    if not thresholded_peers(compiled.cdss):
        return None  # no R_x: no fixpoint to run
    rejections = eng.threshold_rejections(compiled, base, spark)
    base.update(rejections)
    return sum(map(len, rejections.values()))


def compute_from_scratch(
    eng: Any,
    compiled: CompiledCDSS,
    base: Mapping[str, set[Row]],
    *,
    spark: Any = None,
    progress: Any = None,
    scratch_dir: str | Path | None = None,
) -> Any:
    """Evaluate ``compiled``'s program on engine ``eng`` over ``base`` (every EDB relation as
    Python values, ``R_x`` included); the engine's :class:`~selp.engines.result.EvalResult`,
    to be closed by the caller. ``scratch_dir``: where an engine reading files may write them."""
    return eng.compute(analyze(compiled.program), base, progress, spark, scratch_dir)
