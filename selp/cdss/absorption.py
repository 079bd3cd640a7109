"""``selp cdss exchange --strategy absorption``: the compiled CDSS program maintained across
publications with absorption provenance [LTZIL10] (:mod:`selp.maintain.absorption`).

Every published base tuple (``R_l``, ``R_r``, ``R_x``) is a Boolean variable and every tuple of
the compiled program carries the minimal positive formula of its derivations. An exchange turns
the publications since the start epoch into base changes: deletions (a retracted local tuple, a
withdrawn rejection) restrict their variables to false -- a tuple whose formula becomes false
leaves every instance, with no over-deletion and no re-derivation, exact on the cycles that
weakly acyclic mappings allow (``bidir``'s ``<->``, ``bio``'s m3/m4); insertions propagate only
derivations the formulas do not absorb. The rejections are negated atoms: the components reading
them are recomputed from their maintained inputs, their facts getting variables of their own
(see :mod:`selp.maintain.absorption`).

Durable state: the maintainer (views plus formulas, BDDs serialised as node lists) is pickled as
``absorption.state`` inside the epoch directory it produced, so it is written, committed
(renamed), kept and garbage-collected with that epoch -- atomically with the instances it
describes. The next absorption exchange starts from the latest epoch's state; when that epoch
has none (it was computed by another strategy, or its state is unreadable or for another
compiled program), the formulas are built from the published base data and the exchange says so.
When a formula passes the cap the view goes on under DRed (:func:`selp.maintain.session.apply`),
said through ``say`` and recorded in the epoch's statistics as ``running: dred``.
"""

from __future__ import annotations

import pickle
import time
from pathlib import Path
from typing import Any, Callable

from selp.cdss.store import Row, Store, program_fingerprint
from selp.database import write_bytes
from selp.language.validate import analyze
from selp.maintain import session
from selp.maintain.base import Maintainer

STATE_FILE = "absorption.state"
STATE_VERSION = 1
Say = Callable[[str], None]


def load_state(store: Store, start: Any, say: Say) -> Maintainer | None:
    """The maintainer saved with epoch ``start`` (an :class:`~selp.cdss.store.ExchangeInfo`), or
    None (said why) when there is none usable."""
    if start is None:
        return None
    path = store.epoch_dir(start.epoch) / STATE_FILE
    if not path.exists():
        say(f"epoch {start.epoch} was computed by {start.strategy}: building the formulas from the base data")
        return None
    try:
        with open(path, "rb") as fh:
            version, program, maintainer = pickle.load(fh)
    except Exception as err:  # a damaged file is derived data: rebuild, never a traceback
        say(f"{path}: unreadable absorption state ({type(err).__name__}): building the formulas from the base data")
        return None
    if version != STATE_VERSION or program != program_fingerprint(store.compiled) or not isinstance(maintainer, Maintainer):
        say(f"{path}: absorption state of another version or program: building the formulas from the base data")
        return None
    return maintainer


def save_state(store: Store, maintainer: Maintainer, tmp: Path) -> int:
    """Pickle ``maintainer`` into the epoch directory being written; its size in bytes."""
    data = pickle.dumps((STATE_VERSION, program_fingerprint(store.compiled), maintainer), protocol=pickle.HIGHEST_PROTOCOL)
    write_bytes(tmp / STATE_FILE, data)
    return len(data)


def run_absorption(store: Store, base: dict[str, set[Row]], start: Any, tmp: Path, stats: dict[str, Any], say: Say) -> dict[str, int]:
    """One exchange epoch maintained with absorption provenance (see the module docstring): the
    relations written into ``tmp`` with the maintainer's state; their sizes."""
    from selp.cdss.exchange_steps import write_epoch

    t0 = time.perf_counter()
    analysis = analyze(store.compiled.program)
    new_base = {rel: set(base.get(rel, ())) for rel in analysis.edb}
    maintainer = load_state(store, start, say)
    fallbacks: list[str] = []
    if maintainer is None:
        maintainer = session.build("absorption", analysis, new_base, warn=fallbacks.append)
        stats["absorption_built"] = True
        n_ins = sum(map(len, new_base.values()))
        n_del = 0
    else:
        say(f"starting from epoch {start.epoch}'s formulas (publication {start.publication})")
        old_base = maintainer.base()
        inserts = {rel: rows - old_base.get(rel, set()) for rel, rows in new_base.items()}
        deletes = {rel: rows - new_base.get(rel, set()) for rel, rows in old_base.items()}
        n_ins, n_del = sum(map(len, inserts.values())), sum(map(len, deletes.values()))
        say(f"delta: {n_ins} insertion(s), {n_del} deletion(s)")
        maintainer, changes = session.apply(maintainer, inserts, deletes, warn=fallbacks.append)
        stats["view_changes"] = changes.count()
    for msg in fallbacks:
        say(msg)
    state: dict[str, set[Row]] = {**maintainer.view(), **maintainer.base()}
    stats.update(
        inserted_base=n_ins,
        deleted_base=n_del,
        running=maintainer.strategy,
        start_epoch=start.epoch if start else None,
        provenance_bytes=int(maintainer.provenance_stats().get("provenance_bytes", 0)),
    )
    stats["state_bytes"] = save_state(store, maintainer, tmp)
    say(f"maintained in {time.perf_counter() - t0:.2f}s ({maintainer.strategy}); writing the epoch")
    return write_epoch(store, tmp, state)
