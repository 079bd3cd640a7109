"""The steps of one update exchange that differ per engine, reached through the engine interface
(:meth:`selp.engines.base.Engine.exchange_epoch`, :meth:`~selp.engines.base.Engine.check_strategy`).

:func:`run_in_process` computes an epoch over Python sets (the ``embedded`` and ``reference``
engines): ``recompute`` hands the base data to the engine as Python facts
(:meth:`~selp.engines.base.Engine.compute`), the incremental strategies maintain the previous
epoch's sets. :func:`run_spark` does the same with DataFrames and lets Spark write the epoch.
This module imports no engine registry: the engines call into it.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path
from typing import Any, Callable

from selp.cdss.errors import CdssError
from selp.cdss.store import DamagedStore, Row, Store, crash_hook, write_relation
from selp.engines.local import progress_line

Say = Callable[[str], None]


def find_strategy(strategy: str, name: str, modules: list[str], engine: str) -> Callable:
    """The function ``name`` from the first of ``modules`` that has it, or a one-line error
    naming ``engine`` (the incremental code is a colleague's and may be absent)."""
    for mod in modules:
        try:
            fn = getattr(importlib.import_module(mod), name, None)
        except ImportError:
            continue
        if fn is not None:
            return fn
    raise CdssError(f"strategy {strategy} is not available yet on {engine} (no {name} in selp.cdss.incremental); use --strategy recompute")


def delta(old: dict[str, set[Row]], new: dict[str, set[Row]]) -> tuple[dict[str, set[Row]], dict[str, set[Row]]]:
    """(insertions, deletions) per relation from ``old`` to ``new``."""
    inserts = {rel: new[rel] - old.get(rel, set()) for rel in new}
    deletes = {rel: old.get(rel, set()) - new[rel] for rel in new}
    return inserts, deletes


def progress_printer(say: Say, t0: float) -> Callable:
    """An engine's progress callback that speaks once the evaluation has run a second."""

    def progress(component: Any, iteration: int, delta: int, total: int) -> None:
        if time.perf_counter() - t0 > 1.0:
            say(progress_line(component, iteration, delta, total, time.perf_counter() - t0))

    return progress


def write_epoch(store: Store, tmp: Path, relations: dict[str, set[Row]]) -> dict[str, int]:
    """Write every relation of the store into the epoch directory ``tmp``; their sizes."""
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


def run_in_process(eng: Any, store: Store, base, start, incremental, strategy, tmp, stats, say) -> dict[str, int]:
    """An exchange on an in-process engine ``eng``: ``recompute`` evaluates the base data as
    Python facts; the incremental strategies maintain Python sets
    (:func:`selp.cdss.incremental.apply_changes`)."""
    t0 = time.perf_counter()
    if incremental is None:
        from selp.cdss.recompute import compute_from_scratch

        result = compute_from_scratch(eng, store.compiled, base, progress=progress_printer(say, t0))
        try:
            state = {rel: set(result.rows(rel)) for rel in result.relations()}
        finally:
            result.close()  # the embedded engine's DuckDB database: freed before writing
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
                return run_in_process(eng, store, base, None, None, "recompute", tmp, stats, say)
        old_base = {rel: old_state.get(rel, set()) for rel in base}
        inserts, deletes = delta(old_base, base)
        say(f"delta: {sum(map(len, inserts.values()))} insertion(s), {sum(map(len, deletes.values()))} deletion(s)")
        state, inc_stats = incremental(store.compiled, old_state, inserts, deletes, strategy)
        stats.update({k: v for k, v in dict(inc_stats).items() if isinstance(v, (int, float, str, bool))})
        stats["start_epoch"] = start.epoch if start else None
    say(f"computed in {time.perf_counter() - t0:.2f}s; writing the epoch")
    return write_epoch(store, tmp, state)


def run_spark(eng: Any, store: Store, base, start, incremental, strategy, spark, tmp, stats, say) -> dict[str, int]:
    """An exchange on the Spark engine ``eng`` (``spark``: its session): relations stay
    DataFrames and Spark writes the epoch."""
    from pyspark.sql import functions as F

    from selp.engines.spark_frames import encoded_frame

    t0 = time.perf_counter()
    if incremental is None:
        from selp.cdss.recompute import compute_from_scratch

        # the base data inside the store, not /tmp: on a cluster the executors read these files,
        # and the CDSS directory is what is on storage they share (a crash leaves a .tmp- dir
        # the next exchange removes)
        result = compute_from_scratch(
            eng, store.compiled, base, spark=spark, progress=progress_printer(say, t0), scratch_dir=store.instances_dir
        )
        try:
            frames = {rel: result.frame(rel) for rel in store.relation_names()}
            stats["iterations"] = result.iterations
            return write_spark(store, frames, tmp, say)
        finally:
            result.close()

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
    inserts, deletes = delta(old_base, base)
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
    return write_spark(store, new_frames, tmp, say)


def write_spark(store: Store, frames: dict, tmp: Path, say: Say) -> dict[str, int]:
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
