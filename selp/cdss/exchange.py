"""Update exchange through the store: bring a peer's instance up to date with what is published.

:func:`exchange` (``selp cdss exchange``) takes the store's exchange lock, reads the base data of
every peer as of the latest publication (the published edit logs replayed: ``R_l`` and ``R_r``),
computes every relation of the compiled program, writes them as a new exchange epoch and points
the peer at it (see :mod:`selp.cdss.store` for the atomic switch).

Semantics (dissertation §3.1, §5; digest 1.1, 3): an exchange reads the *published* edits of all
peers, the exchanging peer's own included: unpublished edits are not in anyone's instance, the
peer's own neither (``selp cdss exchange --publish`` publishes first, as ORCHESTRA does). Every
relation is computed with the trust policy of the peer that owns it (:mod:`selp.cdss.compile`),
so the state is the same whichever peer exchanges; what differs is which publication each
peer's instance reflects.

Strategies:

* ``recompute`` — full computation: the compiled program evaluated by one of selp's engines
  (:mod:`selp.engines.registry`: ``embedded`` by default, ``reference``, ``spark``) over the
  published base data (semi-naive to the fixpoint).
* ``provenance`` / ``dred`` — incremental maintenance by
  :func:`selp.cdss.incremental.apply_changes` over Python sets on the in-process engines
  (``apply_changes_spark`` on Spark), starting from
  the latest committed epoch (whoever exchanged it) with the base-data delta since the
  publication it reflects. When there is no earlier epoch the start is the empty state (all
  relations empty) and the delta is all base data. When the earlier epoch was computed from a
  different compiled program (``cdss.toml``'s mappings or trust changed) its state is not a
  valid start, so the exchange recomputes and says so.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from selp.cdss.errors import CdssError
from selp.cdss.store import DamagedStore, ExchangeInfo, Row, Store, crash_hook, epoch_name, program_fingerprint, write_relation
from selp.engines.registry import DEFAULT as DEFAULT_ENGINE
from selp.engines.registry import Engine, get_engine
from selp.errors import SelpError

STRATEGIES = ("recompute", "provenance", "dred")
Say = Callable[[str], None]


@dataclass(frozen=True)
class ExchangeResult:
    """A committed exchange."""

    info: ExchangeInfo
    collected: list[int]
    sizes: dict[str, int]


def _delta(old: dict[str, set[Row]], new: dict[str, set[Row]]) -> tuple[dict[str, set[Row]], dict[str, set[Row]]]:
    inserts = {rel: new[rel] - old.get(rel, set()) for rel in new}
    deletes = {rel: old.get(rel, set()) - new[rel] for rel in new}
    return inserts, deletes


def check_strategy(strategy: str, spark: bool) -> Callable:
    """The incremental entry point for ``strategy`` on the engine, or a one-line error.

    ``apply_changes`` lives in :mod:`selp.cdss.incremental`; ``apply_changes_spark`` there or in
    :mod:`selp.cdss.incremental_spark` (both written by a colleague)."""
    import importlib

    name = "apply_changes_spark" if spark else "apply_changes"
    modules = ["selp.cdss.incremental"] + (["selp.cdss.incremental_spark"] if spark else [])
    for mod in modules:
        try:
            fn = getattr(importlib.import_module(mod), name, None)
        except ImportError:
            continue
        if fn is not None:
            return fn
    engine = "the spark engine" if spark else "the in-process engines"
    raise CdssError(f"strategy {strategy} is not available yet on {engine} (no {name} in selp.cdss.incremental); use --strategy recompute")


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
    incremental = check_strategy(strategy, eng.uses_spark) if strategy != "recompute" else None
    with store.exchange_lock(peer, wait):
        t0 = time.perf_counter()
        for p in store.clean_uncommitted():
            say(f"removed {p.name}, left by an interrupted exchange")
        publication = store.last_publication()
        base = store.base_data(publication)
        n_base = sum(len(v) for v in base.values())
        say(f"exchange for {peer}: publication {publication}, {n_base} base tuple(s), {strategy} on the {engine} engine")
        above = _threshold_rejections(store, base, engine, spark, strategy, say)
        epoch = store.new_epoch_number()
        program = program_fingerprint(store.compiled)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{epoch_name(epoch)}-{os.getpid()}-", dir=store.instances_dir))
        stats: dict[str, Any] = {}
        used = strategy
        start = store.last_exchange() if incremental is not None else None
        if start is not None and start.program != program:
            say(f"mappings or trust changed since epoch {start.epoch}: recomputing instead of {strategy}")
            incremental, used = None, "recompute"
        if start is not None and start.collected:  # cannot happen: the latest epoch is kept
            incremental, used = None, "recompute"
        try:
            if eng.uses_spark:
                sizes = _run_spark(store, base, start, incremental, strategy, spark, tmp, stats, say)
            else:
                sizes = _run_in_process(store, eng, base, start, incremental, strategy, tmp, stats, say)
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

        maintain_asrs(store, epoch, spark if eng.uses_spark else None, say)
        collected = store.collect_garbage(keep)
        if collected:
            say(f"garbage-collected epoch(s) {', '.join(map(str, collected))}")
    return ExchangeResult(info, collected, sizes)


def _threshold_rejections(store: Store, base: dict[str, set[Row]], engine: str, spark: Any, strategy: str, say: Say) -> int | None:
    """Add ``R_x`` (imports above their owner's ranked-trust threshold, :mod:`selp.cdss.ranked`)
    to ``base``; the number of such tuples, or None when no peer has a threshold."""
    from selp.cdss.compile import thresholded_peers
    from selp.cdss.ranked import threshold_rejections

    viewpoints = thresholded_peers(store.compiled.cdss)
    if not viewpoints:
        return None
    t0 = time.perf_counter()
    rejections = threshold_rejections(store.compiled, base, engine, spark)
    base.update(rejections)
    n = sum(map(len, rejections.values()))
    how = "" if strategy == "recompute" else f"; {strategy} then maintains the instances with them like rejections"
    say(
        f"ranked trust of {', '.join(viewpoints)}: {n} import(s) above the threshold"
        f" (costs recomputed in full from the base data, {time.perf_counter() - t0:.2f}s{how})"
    )
    return n


def _progress(say: Say, t0: float) -> Callable:
    def progress(component: Any, iteration: int, delta: int, total: int) -> None:
        if time.perf_counter() - t0 > 1.0:
            say(f"  iteration {iteration}: {delta} new, {total} tuples ({time.perf_counter() - t0:.1f}s)")

    return progress


def _write_epoch(store: Store, tmp: Path, relations: dict[str, set[Row]]) -> dict[str, int]:
    sizes = {}
    for i, rel in enumerate(store.relation_names()):
        rows = relations.get(rel, set())
        write_relation(tmp, rel, store.columns(rel), rows)
        sizes[rel] = len(rows)
        if i == 0:
            crash_hook()
    return sizes


def materialise_base(store: Store, base: dict[str, set[Row]], target: Path) -> None:
    """Write the base data as ``--db`` files (typed Parquet) for selp's loaders."""
    from selp.database import write_parquet

    for rel, rows in base.items():
        if rows:
            cols = store.columns(rel)
            write_parquet(target / f"{rel}.parquet", tuple(c for c, _ in cols), tuple(t for _, t in cols), sorted(rows, key=repr))


def _run_in_process(store: Store, eng: Engine, base, start, incremental, strategy, tmp, stats, say) -> dict[str, int]:
    """An exchange on an engine without Spark: ``recompute`` runs ``eng`` over the base data
    written as typed Parquet (the same loader and checks as ``selp eval``); the incremental
    strategies maintain Python sets (:func:`selp.cdss.incremental.apply_changes`)."""
    t0 = time.perf_counter()
    if incremental is None:
        from selp.language.validate import analyze

        with tempfile.TemporaryDirectory(prefix="selp-cdss-base-") as db:
            materialise_base(store, base, Path(db))
            result = eng.run(analyze(store.compiled.program), db, _progress(say, t0))
            try:
                state = {rel: set(result.rows(rel)) for rel in result.relations()}
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()  # the embedded engine's DuckDB database: freed before writing
        state.update(base)
        stats["iterations"] = result.iterations
    else:
        if start is None:
            old_state: dict[str, set[Row]] = {rel: set() for rel in store.relation_names()}
        else:
            say(f"starting from epoch {start.epoch} (publication {start.publication})")
            try:
                old_state = store.read_epoch(start.epoch)
            except DamagedStore as err:
                # the epoch is derived data: recomputing from the base data is always possible
                # on stderr even with --quiet: a warning, not progress
                print(f"warning: {err.message.split('; instances are')[0]}; recomputing from the edit log instead", file=sys.stderr)
                stats["recovered"] = "damaged start epoch: recomputed"
                return _run_in_process(store, eng, base, None, None, "recompute", tmp, stats, say)
        old_base = {rel: old_state.get(rel, set()) for rel in base}
        inserts, deletes = _delta(old_base, base)
        say(f"delta: {sum(map(len, inserts.values()))} insertion(s), {sum(map(len, deletes.values()))} deletion(s)")
        state, inc_stats = incremental(store.compiled, old_state, inserts, deletes, strategy)
        stats.update({k: v for k, v in dict(inc_stats).items() if isinstance(v, (int, float, str, bool))})
        stats["start_epoch"] = start.epoch if start else None
    say(f"computed in {time.perf_counter() - t0:.2f}s; writing the epoch")
    return _write_epoch(store, tmp, state)


def _run_spark(store, base, start, incremental, strategy, spark, tmp, stats, say) -> dict[str, int]:
    from pyspark.sql import functions as F

    from selp.engines.spark_frames import encoded_frame

    if spark is None:
        from selp.engines.spark_session import get_spark

        spark = get_spark()
    t0 = time.perf_counter()
    result = None
    if incremental is None:
        from selp.engines.spark import run_spark
        from selp.language.validate import analyze

        # inside the store, not /tmp: on a cluster the executors read these files, and the CDSS
        # directory is what is on storage they share (a crash leaves a .tmp- dir the next
        # exchange removes)
        db = tempfile.TemporaryDirectory(prefix=f".tmp-base-{os.getpid()}-", dir=store.instances_dir)
        try:
            materialise_base(store, base, Path(db.name))
            result = run_spark(analyze(store.compiled.program), db.name, spark, _progress(say, t0))
            frames = {rel: result.frame(rel) for rel in store.relation_names()}
            stats["iterations"] = result.iterations
            sizes = _write_spark(store, frames, tmp, say)
        finally:
            if result is not None:
                result.close()
            db.cleanup()
        return sizes

    def frame_of(rows: set[Row], rel: str):
        arity = len(store.columns(rel))
        return encoded_frame(spark, rows, arity)

    if start is None:
        frames = {rel: frame_of(set(), rel) for rel in store.relation_names()}
        old_base = {rel: set() for rel in base}
    else:
        say(f"starting from epoch {start.epoch} (publication {start.publication})")
        frames = {}
        for rel in store.relation_names():
            df = spark.read.parquet(str(store.epoch_dir(start.epoch) / f"{rel}.parquet"))
            frames[rel] = df.select(*[F.col(c).alias(f"c{i}") for i, c in enumerate(df.columns)])
        old_base = store.read_epoch(start.epoch, list(base))
    inserts, deletes = _delta(old_base, base)
    say(f"delta: {sum(map(len, inserts.values()))} insertion(s), {sum(map(len, deletes.values()))} deletion(s)")
    new_frames, inc_stats = incremental(
        store.compiled,
        frames,
        # only relations that changed: an empty frame would still cost a Spark job to size
        {rel: frame_of(rows, rel) for rel, rows in inserts.items() if rows},
        {rel: frame_of(rows, rel) for rel, rows in deletes.items() if rows},
        spark,
        strategy,
    )
    stats.update({k: v for k, v in dict(inc_stats).items() if isinstance(v, (int, float, str, bool))})
    stats["start_epoch"] = start.epoch if start else None
    return _write_spark(store, new_frames, tmp, say)


def _write_spark(store: Store, frames: dict, tmp: Path, say: Say) -> dict[str, int]:
    """Spark writes each relation as a directory of part files (columns named as declared)."""
    from pyspark.sql import functions as F

    sizes = {}
    for i, rel in enumerate(store.relation_names()):
        names = [c for c, _ in store.columns(rel)]
        df = frames[rel]
        out = df.select(*[F.col(f"c{j}").alias(n) for j, n in enumerate(names)]).distinct()
        out.coalesce(1).write.parquet(str(tmp / f"{rel}.parquet"))
        sizes[rel] = -1  # counted below from the files written (no second Spark job)
        if i == 0:
            crash_hook()
    import pyarrow.parquet as pq

    for rel in sizes:
        parts = [p for p in (tmp / f"{rel}.parquet").iterdir() if p.name.startswith("part-")]
        sizes[rel] = sum(pq.read_metadata(p).num_rows for p in parts)
    say(f"written by Spark: {len(sizes)} relation(s)")
    return sizes
