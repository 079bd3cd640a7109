"""The engine interface: what every evaluation engine implements, over the same inputs.

An engine is one :class:`Engine` subclass in its own module, registered once in
:mod:`selp.engines.registry`. The product reaches engine-specific code only through these
operations, so adding an engine touches its module and one registry entry:

* evaluation -- :meth:`Engine.run` (a database directory), :meth:`Engine.evaluate` (Python facts
  to Python sets) and :meth:`Engine.compute` (Python facts to a kept result: the CDSS's
  "compute every instance from scratch");
* the top-k DTable -- :meth:`Engine.open_topk` loads the data and returns a :class:`TopkInput`
  that knows the column types and runs a task;
* the CDSS exchange -- :meth:`Engine.check_strategy` (the incremental entry point, refused fast
  when absent), :meth:`Engine.exchange_epoch` (one epoch's relations, recomputed or maintained)
  and :meth:`Engine.threshold_rejections` (ranked trust's ``R_x``; :meth:`Engine.ranked_trust`,
  the same capped fixpoint computed in this process, for ``selp cdss trust`` and ``explain``);
* ProQL -- :meth:`Engine.proql` (the in-memory graph, or Spark's);
* counting -- :meth:`Engine.counting`: a store of Z-relations (signed derivation counts) on this
  engine, what ``selp adapt`` and ``--strategy adapt`` evaluate rewritten plans in ([GI12]);
* :attr:`Engine.needs_spark_session` -- whether a command starts a Spark session for it (and
  accepts ``--master``/``--conf``);
* :attr:`Engine.computes_from_files` -- whether it reads the database files inside each run
  (what a benchmark times with the loading) rather than Python facts loaded beforehand.

This module imports no engine: it is the layer both the engines and their callers depend on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from selp.values import Value

if TYPE_CHECKING:
    from selp.adapt.zprogram import ZEngine
    from selp.cdss.compile import CompiledCDSS
    from selp.cdss.proql.evaluate import QueryResult
    from selp.cdss.store import ExchangeInfo, Store
    from selp.database import Database
    from selp.language.pattern import PatternNode
    from selp.language.validate import Analysis
    from selp.topk.dtable import DTable
    from selp.topk.monoid import Monoid
    from selp.topk.task import Task

Row = tuple[Value, ...]
DEFAULT = "embedded"
Say = Callable[[str], None]
Warn = Callable[[str], None]


@dataclass
class EvalStats:
    """What an evaluation reports back to its caller (the exchange records ``iterations``)."""

    iterations: int = 0
    seconds: float = 0.0


def warn_not_goal_directed(node: PatternNode | None, engine: str, warn: Warn) -> None:
    """Say that constants in the answer filter do not narrow the evaluation on ``engine`` (only
    the embedded and spark engines evaluate goal-directed)."""
    if node is not None and node.args and any(a is not None for a in node.args):
        warn(f"goal-directed evaluation runs on the embedded and spark engines; the {engine} engine evaluates the whole program")


class TopkInput(ABC):
    """An engine's loaded input for one top-k computation: the column types (the pattern is
    checked and the task built against them), then :meth:`run` once."""

    types: dict[str, tuple[str, ...]]

    @abstractmethod
    def run(
        self,
        task: Task,
        node: PatternNode | None,
        algorithm: str,
        progress: Callable | None,
        warn: Warn,
        goal_directed: bool,
    ) -> DTable:
        """The DTable of ``task``; ``node`` is the answer filter (its constants may make the
        evaluation goal-directed where the engine supports it -- otherwise it says so through
        ``warn``)."""

    def close(self) -> None:
        """Release what :meth:`run` did not take over (called when the run never happened)."""


class Engine(ABC):
    """An evaluation engine (see the module docstring for what each operation serves)."""

    name: str
    description: str

    @property
    def needs_spark_session(self) -> bool:
        """True when the engine runs on a Spark session (commands start one, accept
        ``--master``/``--conf``, and the ProQL/ASR options that only Spark has)."""
        return False

    @property
    def computes_from_files(self) -> bool:
        """True when the engine's own input is the database directory: it reads the files inside
        each run (DuckDB's scans, Spark's readers), so there is no separate loading step to leave
        out of a measurement. False when it computes over Python facts loaded beforehand (the
        reference engine), which a benchmark loads once and then times without the loading."""
        return False

    @property
    def uses_spark(self) -> bool:
        """The earlier name of :attr:`needs_spark_session`, kept for callers outside selp."""
        return self.needs_spark_session

    # -- evaluation -------------------------------------------------------------------------
    @abstractmethod
    def run(self, analysis: Analysis, db_dir: str | Path | None, progress: Any = None, spark: Any = None) -> Any:
        """Evaluate over a database directory (plus the program's inline facts); an
        :class:`~selp.engines.result.EvalResult`."""

    @abstractmethod
    def evaluate(
        self,
        analysis: Analysis,
        facts: Mapping[str, Iterable[Row]],
        progress: Any = None,
        spark: Any = None,
        stats: EvalStats | None = None,
    ) -> dict[str, set[Row]]:
        """The IDB fixpoint of EDB facts given as Python values, as Python sets (inline facts of
        the program are not added); ``stats`` receives the iterations."""

    @abstractmethod
    def compute(
        self,
        analysis: Analysis,
        facts: Mapping[str, Iterable[Row]],
        progress: Any = None,
        spark: Any = None,
        scratch_dir: str | Path | None = None,
    ) -> Any:
        """Like :meth:`evaluate`, but the fixpoint stays in the engine: an
        :class:`~selp.engines.result.EvalResult` (close it when done). ``scratch_dir`` is where
        an engine that reads files may write the facts (default: the system's temporary
        directory)."""

    # -- top-k ------------------------------------------------------------------------------
    @abstractmethod
    def open_topk(self, analysis: Analysis, source: Any, monoid: Monoid, spark: Any, warn: Warn) -> TopkInput:
        """Load ``source`` (a database directory or a :class:`~selp.database.Database`) for a
        top-k computation ranked by ``monoid``; loading warnings go to ``warn``."""

    # -- CDSS exchange ----------------------------------------------------------------------
    @abstractmethod
    def check_strategy(self, strategy: str) -> Callable:
        """The incremental entry point for ``strategy`` on this engine, or a one-line
        :class:`~selp.cdss.errors.CdssError` when it is not available."""

    @abstractmethod
    def exchange_epoch(
        self,
        store: Store,
        base: dict[str, set[Row]],
        start: ExchangeInfo | None,
        incremental: Callable | None,
        strategy: str,
        tmp: Path,
        stats: dict[str, Any],
        say: Say,
        spark: Any = None,
    ) -> dict[str, int]:
        """Write every relation of the new epoch into ``tmp``: recomputed from ``base`` when
        ``incremental`` is None, else maintained from epoch ``start`` (None: the empty state) by
        ``incremental``; returns each relation's size and adds to ``stats``."""

    @abstractmethod
    def threshold_rejections(self, compiled: CompiledCDSS, base: Mapping[str, set[Row]], spark: Any = None) -> dict[str, set[Row]]:
        """``R_x`` of every thresholded peer's relations (see :mod:`selp.cdss.ranked`)."""

    def ranked_trust_place(self, base: Mapping[str, set[Row]], spark: Any = None) -> str:
        """Where :meth:`threshold_rejections` computes ranked trust over ``base`` (for exchange's
        message)."""
        from selp.cdss.ranked_duck import is_small

        return "in Python (a small store)" if is_small(base) else "in DuckDB"

    def ranked_trust(self, rp: Any, base: Mapping[str, set[Row]], reports: tuple[str, ...] = ()) -> Any:
        """Ranked trust's capped min-cost fixpoint (:class:`selp.cdss.ranked.RankedProgram` ``rp``
        over ``base``, Python values) computed in this process: the
        :class:`~selp.cdss.ranked.RankedResult` with ``R_x`` and the cost vectors of the import
        relations in ``reports``. In DuckDB (:func:`selp.cdss.ranked_duck.ranked_in_process`:
        in Python for a small store) unless the engine has its own (the reference engine's oracle)."""
        from selp.cdss.ranked_duck import ranked_in_process

        return ranked_in_process(rp, base, reports=reports)

    # -- ProQL ------------------------------------------------------------------------------
    @abstractmethod
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
    ) -> tuple[QueryResult, Any]:
        """Parse, check and evaluate a ProQL query over the store of ``directory``: the
        :class:`~selp.cdss.proql.evaluate.QueryResult` (with the graph when ``graph``), and the
        engine's own result when it has one worth explaining (Spark's plan), else None."""

    # -- counting (Z-relations) -------------------------------------------------------------
    @abstractmethod
    def counting(self, spark: Any = None) -> ZEngine:
        """A new, empty store of Z-relations (:class:`selp.adapt.zprogram.ZEngine`) evaluated by
        this engine (on the session ``spark`` when the engine runs on one, else its default)."""
