"""Update exchange through the store: bring a peer's instance up to date with what is published.

:func:`exchange` (``selp cdss exchange``) takes the store's exchange lock, reads the base data of
every peer as of the latest publication (the published edit logs replayed: ``R_l`` and ``R_r``),
computes every relation of the compiled program, writes them as a new exchange epoch and points
the peer at it (see :mod:`selp.cdss.store` for the atomic switch).

Semantics ([Kar09] §3.1 and ch. 5): an exchange reads the *published* edits of all
peers, the exchanging peer's own included: unpublished edits are not in anyone's instance, the
peer's own neither (``selp cdss exchange --publish`` publishes first, as ORCHESTRA does). Every
relation is computed with the trust policy of the peer that owns it (:mod:`selp.cdss.compile`),
so the state is the same whichever peer exchanges; what differs is which publication each
peer's instance reflects.

What differs per engine is behind the engine interface (:meth:`~selp.engines.base.Engine.exchange_epoch`,
``check_strategy``, ``threshold_rejections``; the steps are in :mod:`selp.cdss.exchange_steps`).

Strategies:

* ``recompute`` — full computation: the compiled program evaluated by one of selp's engines
  (:mod:`selp.engines.registry`: ``embedded`` by default, ``reference``, ``spark``) over the
  published base data handed over as Python facts (:mod:`selp.cdss.recompute`).
* ``provenance`` / ``dred`` — incremental maintenance by
  :func:`selp.cdss.incremental.apply_changes` over Python sets on the in-process engines
  (``apply_changes_spark`` on Spark), starting from
  the latest committed epoch (whoever exchanged it) with the base-data delta since the
  publication it reflects. When there is no earlier epoch the start is the empty state (all
  relations empty) and the delta is all base data. When the earlier epoch was computed from a
  different compiled program (``cdss.toml``'s mappings or trust changed) its state is not a
  valid start, so the exchange recomputes and says so.
* ``absorption`` — the compiled program maintained with absorption provenance, the formulas kept
  in the epoch directory between exchanges (:mod:`selp.cdss.absorption`; in-process engines).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from selp.cdss.adapt import PROGRAM_FILE
from selp.cdss.errors import CdssError
from selp.cdss.recompute import add_threshold_rejections
from selp.cdss.store import ExchangeInfo, Row, Store, epoch_name, program_fingerprint
from selp.engines.registry import DEFAULT as DEFAULT_ENGINE
from selp.engines.registry import ENGINES, Engine, get_engine
from selp.errors import SelpError
from selp.outfile import temp_dir

STRATEGIES = ("recompute", "provenance", "dred", "absorption", "adapt")
NOT_INCREMENTAL = ("recompute", "adapt")  # strategies that need no engine's incremental entry point
Say = Callable[[str], None]


@dataclass(frozen=True)
class ExchangeResult:
    """A committed exchange."""

    info: ExchangeInfo
    collected: list[int]
    sizes: dict[str, int]


def check_strategy(strategy: str, spark: bool) -> Callable:
    """The incremental entry point for ``strategy`` on the Spark engine (``spark``) or the
    in-process ones, or a one-line error (:meth:`selp.engines.base.Engine.check_strategy`)."""
    eng = next(e for e in ENGINES.values() if e.needs_spark_session == spark)
    return eng.check_strategy(strategy)


def exchange(
    store: Store,
    peer: str,
    engine: str = DEFAULT_ENGINE,
    strategy: str = "recompute",
    *,
    spark: Any = None,
    wait: float = 10.0,
    keep: int = 3,
    say: Say = lambda msg: None,
) -> ExchangeResult:
    """Run update exchange for ``peer`` on the engine registered as ``engine`` (an alias such as
    ``local`` is recorded under its registered name; see the module docstring); ``say`` reports
    progress."""
    store.check_peer(peer)
    try:
        eng = get_engine(engine)
    except SelpError as err:
        raise CdssError(err.message) from None
    engine = eng.name
    if strategy not in STRATEGIES:
        raise CdssError(f"unknown strategy {strategy!r}; use {', '.join(STRATEGIES)}")
    incremental = eng.check_strategy(strategy) if strategy not in NOT_INCREMENTAL else None
    with store.exchange_lock(peer, wait):
        t0 = time.perf_counter()
        for p in store.clean_uncommitted():
            say(f"removed {p.name}, left by an interrupted exchange")
        publication = store.last_publication()
        base = store.base_data(publication)
        n_base = sum(len(v) for v in base.values())
        say(f"exchange for {peer}: publication {publication}, {n_base} base tuple(s), {strategy} on the {engine} engine")
        above = _threshold_rejections(store, base, eng, spark, strategy, say)
        epoch = store.new_epoch_number()
        program = program_fingerprint(store.compiled)
        tmp = temp_dir(f".tmp-{epoch_name(epoch)}-{os.getpid()}-", store.instances_dir)
        stats: dict[str, Any] = {}
        used = strategy
        start = store.last_exchange() if incremental is not None else None
        if start is not None and start.program != program:
            say(f"mappings or trust changed since epoch {start.epoch}: recomputing instead of {strategy}")
            incremental, used = None, "recompute"
        if start is not None and start.collected:  # cannot happen: the latest epoch is kept
            incremental, used = None, "recompute"
        try:
            if strategy == "adapt":
                sizes, used = _adapt_epoch(store, base, eng, spark, tmp, stats, say)
            elif incremental is not None and strategy == "absorption":  # keeps its formulas in the epoch
                from selp.cdss.absorption import run_absorption

                sizes = run_absorption(store, base, start, tmp, stats, say)
            else:
                sizes = eng.exchange_epoch(store, base, start, incremental, strategy, tmp, stats, say, spark)
            # the program beside the instances: what a later --strategy adapt adapts from
            (tmp / PROGRAM_FILE).write_text(store.compiled.text, encoding="utf-8")
            stats.update(base_tuples=n_base, tuples=sum(sizes.values()))
            if above is not None:
                stats["above_threshold"] = above
            info = ExchangeInfo(epoch, peer, publication, program, engine, used, time.time(), time.perf_counter() - t0, stats, False)
            store.commit_epoch(tmp, info)
        finally:
            if tmp.exists():  # not renamed: the exchange failed before the switch
                shutil.rmtree(tmp, ignore_errors=True)
        say(f"epoch {epoch} committed: {peer} now reflects publication {publication} ({info.seconds:.2f}s)")
        # ProQL's access support relations: carried over from the previous epoch by its deltas
        # (nothing happens, and no Spark starts, when the previous epoch has none; never raises)
        from selp.cdss.proql.asr import maintain_asrs

        maintain_asrs(store, epoch, spark if eng.needs_spark_session else None, say)
        collected = store.collect_garbage(keep)
        if collected:
            say(f"garbage-collected epoch(s) {', '.join(map(str, collected))}")
    return ExchangeResult(info, collected, sizes)


def _adapt_epoch(store: Store, base: dict[str, set[Row]], eng: Engine, spark: Any, tmp: Path, stats: dict[str, Any], say: Say) -> tuple[dict[str, int], str]:
    """``--strategy adapt`` ([GI12], :mod:`selp.cdss.adapt`): the epoch's sizes and the strategy
    used (``recompute`` when there is no earlier epoch with its program to adapt from)."""
    from selp.cdss.adapt import adapt_store
    from selp.cdss.exchange_steps import write_epoch

    result, why = adapt_store(store, base, eng, spark, say=say)
    if result is None:
        say(f"{why}: recomputing instead of adapt")
        return eng.exchange_epoch(store, base, None, None, "recompute", tmp, stats, say, spark), "recompute"
    stats.update(
        adapted=sum(s.how == "adapt" for s in result.steps),
        recomputed=sum(s.how == "recompute" for s in result.steps),
        reused_old=sum(s.how == "adapt" and s.cost < s.recompute_cost for s in result.steps),
        estimated_cost=round(sum(s.cost for s in result.steps)),
        estimated_recompute_cost=round(sum(s.recompute_cost for s in result.steps)),
    )
    return write_epoch(store, tmp, result.state), "adapt"


def _threshold_rejections(store: Store, base: dict[str, set[Row]], eng: Engine, spark: Any, strategy: str, say: Say) -> int | None:
    """Add ``R_x`` (imports above their owner's ranked-trust threshold, :mod:`selp.cdss.ranked`)
    to ``base``; the number of such tuples, or None when no peer has a threshold."""
    from selp.cdss.compile import thresholded_peers

    viewpoints = thresholded_peers(store.compiled.cdss)
    if not viewpoints:
        return None
    t0 = time.perf_counter()
    place = eng.ranked_trust_place(base, spark)
    n = add_threshold_rejections(eng, store.compiled, base, spark)
    how = "" if strategy == "recompute" else f"; {strategy} then maintains the instances with them like rejections"
    say(
        f"ranked trust of {', '.join(viewpoints)}: {n} import(s) above the threshold"
        f" (costs recomputed in full from the base data {place}, {time.perf_counter() - t0:.2f}s{how})"
    )
    return n
