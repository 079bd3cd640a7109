"""What the in-process engines (``embedded``, ``reference``) share behind the engine interface.

They differ in how they evaluate a program (DuckDB SQL, or Python hash joins); everything the
CDSS layer and ProQL need beyond that runs over Python values in this process: the incremental
strategies maintain Python sets (:func:`selp.cdss.incremental.apply_changes`), ranked trust is
computed in this process (:meth:`~selp.engines.base.Engine.ranked_trust`: in DuckDB on the
embedded engine, :func:`selp.cdss.ranked.ranked_local` on the reference engine), ProQL walks the
in-memory provenance graph.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from selp.engines.base import Engine, Row, Say


class InProcessEngine(Engine):
    """An engine evaluating in this process; subclasses supply evaluation and top-k."""

    def check_strategy(self, strategy: str) -> Callable:
        """``apply_changes`` of :mod:`selp.cdss.incremental`, or a one-line error."""
        from selp.cdss.exchange_steps import find_strategy

        return find_strategy(strategy, "apply_changes", ["selp.cdss.incremental"], "the in-process engines")

    def exchange_epoch(
        self,
        store: Any,
        base: dict[str, set[Row]],
        start: Any,
        incremental: Callable | None,
        strategy: str,
        tmp: Path,
        stats: dict[str, Any],
        say: Say,
        spark: Any = None,
    ) -> dict[str, int]:
        """The epoch computed over Python sets (:func:`selp.cdss.exchange_steps.run_in_process`)."""
        from selp.cdss.exchange_steps import run_in_process

        return run_in_process(self, store, base, start, incremental, strategy, tmp, stats, say)

    def threshold_rejections(self, compiled: Any, base: Mapping[str, set[Row]], spark: Any = None) -> dict[str, set[Row]]:
        """``R_x`` by :meth:`ranked_trust` (DuckDB on the embedded engine, Python values on the
        reference engine); an empty dict when no peer has a threshold."""
        from selp.cdss.ranked import RankedProgram

        rp = RankedProgram(compiled)
        return self.ranked_trust(rp, base).rejections if rp.thresholds else {}

    def proql(
        self,
        directory: str,
        text: str,
        *,
        file: str | None = None,
        peer: str | None = None,
        probabilities: dict[str, float] | None = None,
        spark: Any = None,
        use_asrs: bool = True,
        graph: bool = True,
    ) -> tuple[Any, Any]:
        """The query on the in-memory graph of the stored epoch (ASRs are Spark's: not used)."""
        from selp.cdss.proql.run import run_local

        return run_local(directory, text, file, peer, probabilities), None
