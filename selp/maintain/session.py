"""A maintained view that outlives the process: the chosen strategy, its state (views plus
formulas) in one file written atomically, and the fallback from absorption to DRed.

The state is built from the database directory on the first run and then only changed by the
change streams applied to it; it is tied to the program's text (a changed program is refused,
``reset`` rebuilds). When an absorption formula passes the cap the batch is redone exactly --
the view before it recomputed from the old base, the view after it by DRed's initial build --
and the view goes on under DRed, said through ``warn``.
"""

from __future__ import annotations

import hashlib
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping

from selp.database import load_database, write_bytes
from selp.engines.registry import get_engine
from selp.errors import SelpError
from selp.language.validate import Analysis
from selp.maintain.absorption import Absorption
from selp.maintain.base import Maintainer, present_changes
from selp.maintain.dred import DRed
from selp.maintain.formula import DEFAULT_CAP, DEFAULT_NODE_CAP, Blowup
from selp.maintain.program import Fact, ViewChanges, diff
from selp.maintain.recompute import Recompute, from_scratch

STRATEGIES = ("absorption", "dred", "recompute")
STATE_VERSION = 2  # 2: aggregated relations as selp.language.ast.Spec (several aggregates per head)
Warn = Callable[[str], None]


def build(strategy: str, analysis: Analysis, base: Mapping[str, Iterable[Fact]], cap: int = DEFAULT_CAP, engine: str = "reference",
          warn: Warn | None = None, formulas: str = "bdd", order: str = "dfs", distributed: dict | None = None,
          node_cap: int = DEFAULT_NODE_CAP) -> Maintainer:
    """A new maintainer of ``strategy`` over ``base`` (absorption falls back to DRed when its
    initial formulas already pass ``cap`` monomials, or ``node_cap`` live BDD nodes); ``engine``
    ``spark``: the distributed form, with ``distributed``'s options
    (:class:`selp.maintain.spark.Distributed`)."""
    if get_engine(engine).needs_spark_session:  # the distributed form runs over Spark partitions
        if strategy != "absorption":
            raise SelpError(f"--engine spark maintains with --strategy absorption only (got {strategy}); DRed's shipping is measured by selp bench maintain")
        from selp.maintain.spark import Distributed

        return Distributed(analysis, base, cap=cap, **(distributed or {}))
    if strategy == "absorption":
        try:
            return Absorption(analysis, base, cap, formulas, order, node_cap)
        except Blowup as err:
            if warn:
                warn(fallback_message(err, cap))
            return DRed(analysis, base)
    if strategy == "dred":
        return DRed(analysis, base)
    if strategy == "recompute":
        return Recompute(analysis, base, engine)
    raise SelpError(f"unknown strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")


def fallback_message(err: Blowup, cap: int) -> str:
    """What is said on stderr when absorption gives way to DRed."""
    if len(err.args) == 3:  # the BDD manager's node cap
        count, unit, cap = err.args
        return f"absorption: the formulas reached {count} {unit} (cap {cap}); falling back to DRed for this view"
    return f"absorption: a formula reached {err.args[0]} monomials (cap {cap}); falling back to DRed for this view"


def apply(maintainer: Maintainer, inserts: Mapping[str, Iterable[Fact]], deletes: Mapping[str, Iterable[Fact]],
          warn: Warn | None = None) -> tuple[Maintainer, ViewChanges]:
    """Apply one batch; returns the maintainer to use from now on (DRed after a blowup) and the
    view's changes."""
    ins, dels = present_changes(maintainer.stores, inserts, deletes)
    try:
        return maintainer, maintainer.apply(ins, dels)
    except Blowup as err:
        if warn:
            warn(fallback_message(err, getattr(maintainer, "cap", DEFAULT_CAP)))
        analysis = maintainer.analysis
        new_base = maintainer.base()  # the base changes were done before any formula grew
        old_base = {rel: (fs - ins.get(rel, set())) | dels.get(rel, set()) for rel, fs in new_base.items()}
        before = from_scratch(analysis, old_base)
        after = DRed(analysis, new_base)
        return after, diff(before, after.view())


@dataclass
class State:
    """What the state file holds."""

    version: int
    program_hash: str
    strategy: str  # as asked for (the maintainer may be DRed after a fallback)
    types: dict[str, tuple[str, ...]]
    maintainer: Maintainer

    @property
    def running(self) -> str:
        """The strategy actually maintaining the view."""
        return self.maintainer.strategy


def program_hash(analysis: Analysis) -> str:
    """A digest of the program's text (the state is only valid for the program it was built for)."""
    return hashlib.sha256((analysis.program.source or "").encode()).hexdigest()


def default_state_path(program: str | Path, db_dir: str | Path) -> Path:
    """``DIR/.selp-maintain/STEM.state``: beside the data it was built from."""
    return Path(db_dir) / ".selp-maintain" / f"{Path(program).stem}.state"


def open_state(analysis: Analysis, db_dir: str | Path, path: Path, strategy: str, cap: int = DEFAULT_CAP, engine: str = "reference",
               reset: bool = False, warn: Warn | None = None, formulas: str = "bdd", distributed: dict | None = None,
               node_cap: int = DEFAULT_NODE_CAP) -> tuple[State, bool]:
    """The state at ``path`` (built from ``db_dir`` when absent or ``reset``); True when built."""
    digest = program_hash(analysis)
    if path.exists() and not reset:
        try:
            with open(path, "rb") as fh:
                state = pickle.load(fh)
        except Exception as err:  # a truncated or foreign file: say which, never a traceback
            raise SelpError(f"{path}: not a readable maintenance state ({type(err).__name__}); pass --reset to rebuild it") from None
        if not isinstance(state, State) or state.version != STATE_VERSION:
            raise SelpError(f"{path}: a maintenance state of another version; pass --reset to rebuild it")
        if state.program_hash != digest:
            raise SelpError(f"{path}: built for another version of the program; pass --reset to rebuild it from {db_dir}")
        if state.strategy != strategy:
            raise SelpError(f"{path}: maintained with --strategy {state.strategy}; pass --reset to rebuild it with {strategy}")
        return state, False
    db = load_database(analysis, db_dir)
    for w in db.warnings:
        if warn:
            warn(w)
    base = {rel: db.facts.get(rel, set()) for rel in analysis.edb}
    maintainer = build(strategy, analysis, base, cap, engine, warn, formulas, distributed=distributed, node_cap=node_cap)
    return State(STATE_VERSION, digest, strategy, dict(db.types), maintainer), True


def save_state(state: State, path: Path) -> None:
    """Write the state atomically (a temporary file renamed over the old one)."""
    write_bytes(path, pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))


def state_bytes(maintainer: Maintainer) -> int:
    """The size of a maintainer's state as stored."""
    return len(pickle.dumps(maintainer, protocol=pickle.HIGHEST_PROTOCOL))
