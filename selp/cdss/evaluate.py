"""Evaluate a CDSS from scratch: compile it and run one of selp's engines on it.

The engine is named as in :mod:`selp.engines.registry` (``embedded``, the default; ``reference``,
formerly ``local``; ``spark``); callers resolve a user's choice with
:func:`selp.config.choose_engine` first.

This is the full computation of update exchange (every peer's instance recomputed from all base
data, :func:`selp.cdss.recompute.compute_from_scratch`), reading the base data from files:

``BASE/<peer>/<relation>.csv``             the peer's local contributions (``R_l``)
``BASE/<peer>/<relation>.rejections.csv``  the peer's rejections (``R_r``), optional

(``.parquet`` also; a header row naming the relation's attributes in any order). selp's loader
reads them under their internal names (``B_l``) into Python facts, so types, headers and
malformed rows are checked exactly as for ``selp eval``; the engine gets the facts, no files.

Ranked-trust thresholds are enforced as by exchange (:mod:`selp.cdss.ranked`: ``R_x`` is
computed from the base data and added before the evaluation).

Queries at a peer return *certain answers*: tuples holding a labeled null are dropped unless
``with_nulls`` is set ([Kar09] §3.1.1).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selp.cdss.compile import CompiledCDSS, compile_cdss
from selp.cdss.errors import CdssError
from selp.cdss.model import CDSS, RelationRef
from selp.cdss.recompute import add_threshold_rejections, compute_from_scratch
from selp.database import FORMATS
from selp.engines.registry import DEFAULT as DEFAULT_ENGINE
from selp.engines.registry import get_engine
from selp.errors import Location, SelpError
from selp.language.validate import analyze
from selp.values import Skolem, Value

Row = tuple[Value, ...]
REJECTIONS_SUFFIX = ".rejections"


def is_certain(row: Row) -> bool:
    """True when the tuple holds no labeled null."""
    return not any(isinstance(v, Skolem) for v in row)


def base_data_files(cdss: CDSS, compiled: CompiledCDSS, base_dir: str | Path) -> dict[str, Path]:
    """Internal EDB relation name (``B_l``, ``B_r``) -> its file under ``base_dir``.

    Directories and files that name no peer or relation are errors (a typo would otherwise make
    a peer's data silently empty).
    """
    base = Path(base_dir)
    if not base.is_dir():
        raise CdssError(f"base data directory not found: {base}")
    out: dict[str, Path] = {}
    peers = {p.name: p for p in cdss.peers}
    for pdir in sorted(base.iterdir()):
        if pdir.name.startswith((".", "_")):
            continue
        if not pdir.is_dir() or pdir.name not in peers:
            raise CdssError(
                f"not a peer's data directory (peers: {', '.join(peers)})", Location(str(pdir))
            )
        peer = peers[pdir.name]
        for f in sorted(pdir.iterdir()):
            if f.name.startswith((".", "_")):
                continue
            fmt = f.suffix[1:].lower()
            stem = f.stem
            kind = "l"
            if stem.endswith(REJECTIONS_SUFFIX):
                stem, kind = stem[: -len(REJECTIONS_SUFFIX)], "r"
            names = [r.name for r in peer.relations]
            if fmt not in FORMATS or stem not in names:
                raise CdssError(
                    f"expected <relation>.csv or <relation>{REJECTIONS_SUFFIX}.csv (or .parquet) for a"
                    f" relation of {peer.name} ({', '.join(names) or 'none'})",
                    Location(str(f)),
                )
            internal = compiled.names.relation(RelationRef(peer.name, stem), kind)
            if internal in out:
                raise CdssError(f"two files for {peer.name}.{stem}: {out[internal].name} and {f.name}", Location(str(f)))
            out[internal] = f
    return out


@dataclass
class CdssResult:
    """Each peer relation's instance (``R_o``), and the engine's result for everything else.

    ``result`` is the engine's :class:`~selp.engines.result.EvalResult` over the compiled program
    (``P_m``, ``R_i``, ``R_t``, ...); call :meth:`close` when done with it (Spark may read the
    input files it wrote lazily, so they live as long as this object).
    """

    compiled: CompiledCDSS
    instances: dict[RelationRef, set[Row]]
    with_nulls: bool
    result: Any

    def instance(self, peer: str, relation: str) -> set[Row]:
        return self.instances[RelationRef(peer, relation)]

    def close(self) -> None:
        # the embedded engine's result holds a DuckDB database and Spark's cached frames: both
        # are released here, not left to the garbage collector
        close = getattr(self.result, "close", None)
        if close is not None:
            close()


def link_base_data(files: dict[str, Path], target: str | Path) -> None:
    """Link (or copy) the files of :func:`base_data_files` into ``target`` under their internal
    names (``B_l.csv``), making ``target`` a ``--db`` directory for the compiled program."""
    for internal, src in files.items():
        _link(src, Path(target) / f"{internal}{src.suffix.lower()}")


def _link(src: Path, dst: Path) -> None:
    try:
        os.symlink(src.resolve(), dst)
    except OSError:  # file systems without symlinks
        shutil.copyfile(src, dst)


def load_base_data(compiled: CompiledCDSS, files: dict[str, Path]) -> dict[str, set[Row]]:
    """The base data of :func:`base_data_files` as Python facts: every EDB relation of the
    compiled program (empty when it has no file), read by selp's loader -- types, headers and
    malformed rows are checked as for ``selp eval``, errors point at the user's files."""
    from selp.database import TableFile, load_files

    tables = {internal: TableFile(internal, src, src.suffix[1:].lower()) for internal, src in files.items()}
    return load_files(analyze(compiled.program), tables).facts


def evaluate_cdss(
    cdss: CDSS,
    base_data_dir: str | Path | None,
    engine: str = DEFAULT_ENGINE,
    *,
    spark: Any = None,
    with_nulls: bool = False,
    viewpoint: str | None = None,
) -> CdssResult:
    """Compile ``cdss`` and compute every peer's instance from the base data in ``base_data_dir``
    (``None``: no data) with the engine registered as ``engine`` (``spark``: a session for the
    Spark engine; one is started when ``None``). Instances hold certain answers unless
    ``with_nulls``."""
    try:
        eng = get_engine(engine)
    except SelpError as err:
        raise CdssError(err.message) from None
    compiled = compile_cdss(cdss, viewpoint)
    files = base_data_files(cdss, compiled, base_data_dir) if base_data_dir is not None else {}
    base = load_base_data(compiled, files)
    add_threshold_rejections(eng, compiled, base, spark)
    result = compute_from_scratch(eng, compiled, base, spark=spark)
    try:
        instances: dict[RelationRef, set[Row]] = {}
        for ref, rel in compiled.output_relations().items():
            rows = result.rows(rel)
            instances[ref] = set(rows) if with_nulls else {r for r in rows if is_certain(r)}
    except BaseException:
        result.close()
        raise
    return CdssResult(compiled, instances, with_nulls, result)
