"""Access support relations (ASRs, [Kar09] ch. 8): materialised joins of the
provenance tables along mapping paths, stored with an epoch, maintained by update exchange, and
followed by the Spark engine's ``<-+`` fixpoints.

**What an ASR is.** A mapping path ``n1 <- n2 <- ... <- nw`` (``n(i+1)`` derives a tuple that
``ni`` reads) joined at the level of mapping nodes: a row ``(c0, ..., c(w-1))`` says that mapping
node ``c(i+1)`` (a ``P_n(i+1)`` row) derives an input of ``ci`` (a ``P_ni`` row). That is the join
``P_n1 ⋈ P_n2 ⋈ ...`` with the variables unified through the shared tuple, stored as the rows'
node keys only (the display texts of :mod:`.spark_graph`), one column per component.

* **inner**: the complete paths only (the components stay in the graph).
* **outer** (the full outer join): the path *and every contiguous subpath*, the missing
  components NULL (the dissertation's flagged, NULL-padded rules). An outer ASR holds every
  one-step edge of its component mappings, so the engine drops those mappings' own edges and
  follows the ASR instead.

**Use.** An ASR row gives the ancestor edges ``t <- u`` from each output ``t`` of its first
(non-NULL) node to each input ``u`` of every node of the row: up to ``w`` derivation steps in
one edge, and every tuple in between (each an ancestor too) reached in the same round. The
engine's ``<-+`` fixpoints (:func:`.spark_engine.closure`) follow the one-step edges plus these,
so the closure is the same and a chain of ``k`` mappings covered by ASRs of width ``w`` needs
about ``k / w`` rounds instead of ``k``. The rewriting is the dissertation's greedy one made
trivial by the representation: any set of ASRs is correct (each edge is in the transitive
closure), outer ASRs must not overlap (each mapping's edges are dropped once), which the
selection below guarantees by cutting chains into disjoint windows.

**Selection** (the dissertation selects by hand and suggests this heuristic; we make it
automatic, :func:`choose_asrs`): find the *branch-free chains* of the mapping graph — links
``n <- m`` where every relation ``n`` reads is written by ``m`` alone, ``m`` feeds no other
mapping, and those relations hold no local data in the epoch (local data along the way would
make the ASR skip leaves) — and cut each chain, from its downstream end, into disjoint windows
of ``width`` mappings (default :data:`DEFAULT_WIDTH`). A window is kept when its estimated size
``|P_n1| · Π max(1, |P_n(i+1)| / |P_ni|)`` (each downstream node joins about one upstream node
unless the upstream mapping has more rows: more derivations per tuple) is at most
:data:`MAX_GROWTH` times ``|P_n1|``: an ASR that would multiply rows costs more to maintain and
scan than the rounds it saves.

**Storage and maintenance.** ``epoch-N/asr/manifest.json`` lists the ASRs (name, kind, path,
rows) and ``epoch-N/asr/NAME.parquet`` holds each; both are written into a temporary directory
renamed into place, the manifest last, so a reader sees all of an ASR or nothing.
:func:`maintain_asrs` is called by update exchange right after an epoch is committed: when the
previous epoch has ASRs, the new epoch's are its rows minus those with a deleted mapping node,
plus the paths through an inserted one (found by extending the inserted nodes up and down the
path: the delta rules of the join). A failure there is reported and leaves the new epoch without
ASRs (queries stay correct, only slower); the exchange itself has already succeeded.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from selp.cdss.store import Store
from selp.errors import SelpError
from selp.outfile import temp_dir

if TYPE_CHECKING:  # pyspark is imported only when ASRs exist: exchange calls maintain_asrs always
    from pyspark.sql import DataFrame, SparkSession

    from selp.cdss.proql.spark_graph import SparkGraph

ASR_DIR = "asr"
MANIFEST = "manifest.json"
DEFAULT_WIDTH = 8
MAX_GROWTH = 4.0
KINDS = ("inner", "outer")


@dataclass(frozen=True)
class AsrDef:
    """An ASR: its mapping path (downstream first) and join kind."""

    path: tuple[str, ...]
    kind: str = "inner"

    @property
    def name(self) -> str:
        return f"asr_{self.kind}_{'_'.join(self.path)}"

    @property
    def width(self) -> int:
        return len(self.path)


# -- selection -----------------------------------------------------------------------------------
def _row_count(path: Path) -> int:
    import pyarrow.dataset as ds

    return ds.dataset(str(path), format="parquet").count_rows() if path.exists() else 0


def chains(store: Store, epoch: int) -> list[list[str]]:
    """The maximal branch-free mapping chains of the epoch (downstream first; module docstring)."""
    compiled = store.compiled
    names = compiled.names
    edir = store.epoch_dir(epoch)
    writers: dict[str, list[str]] = {}
    readers: dict[str, list[str]] = {}
    for m in compiled.cdss.mappings:
        for a in m.head:
            writers.setdefault(names.base(a.relation), []).append(m.name)
        for a in m.body:
            readers.setdefault(names.base(a.relation), []).append(m.name)
    reads = {m.name: {names.base(a.relation) for a in m.body} for m in compiled.cdss.mappings}
    writes = {m.name: {names.base(a.relation) for a in m.head} for m in compiled.cdss.mappings}
    local_rows = {names.base(r.ref): _row_count(edir / f"{names.relation(r.ref, 'l')}.parquet") for r in compiled.cdss.relations()}

    def upstream(n: str) -> str | None:
        """The one mapping ``n`` is chain-linked to, if any."""
        producers = {w for rel in reads[n] for w in writers.get(rel, [])}
        if len(producers) != 1:
            return None
        m = next(iter(producers))
        if m == n or any(len(writers.get(rel, [])) != 1 or local_rows.get(rel, 0) for rel in reads[n]):
            return None
        if {r for rel in writes[m] for r in readers.get(rel, [])} != {n}:
            return None
        return m

    up = {n: upstream(n) for n in reads}
    has_down = {m for m in up.values() if m is not None}
    out = []
    for n in sorted(reads):
        if n in has_down:
            continue  # not the downstream end of its chain
        chain, seen = [n], {n}
        while up[chain[-1]] is not None and up[chain[-1]] not in seen:
            chain.append(up[chain[-1]])
            seen.add(chain[-1])
        if len(chain) > 1:
            out.append(chain)
    return out


def choose_asrs(store: Store, epoch: int, width: int = DEFAULT_WIDTH, kind: str = "inner") -> list[AsrDef]:
    """The ASRs the heuristic picks for an epoch (module docstring)."""
    if kind not in KINDS:
        raise SelpError(f"unknown ASR kind {kind!r}; use inner or outer")
    if width < 2:
        raise SelpError(f"an ASR joins at least 2 mappings; got width {width}")
    edir = store.epoch_dir(epoch)
    size = {m.name: _row_count(edir / f"P_{m.name}.parquet") for m in store.compiled.cdss.mappings}
    out = []
    for chain in chains(store, epoch):
        for i in range(0, len(chain), width):
            window = chain[i : i + width]
            if len(window) < 2:
                continue
            est = float(max(size[window[0]], 1))
            for a, b in zip(window, window[1:]):
                est *= max(1.0, size[b] / max(size[a], 1))
            if est <= MAX_GROWTH * max(size[window[0]], 1):
                out.append(AsrDef(tuple(window), kind))
    return out


# -- building ------------------------------------------------------------------------------------
def _cols(w: int) -> list[str]:
    return [f"c{i}" for i in range(w)]


def _nodes(g: SparkGraph, mapping: str) -> DataFrame:
    from selp.cdss.proql._spark import F, relation_of
    return g.inputs.select("m").filter(relation_of(F.col("m")) == mapping).distinct()


def _links(g: SparkGraph, upper: str, lower: str) -> DataFrame:
    """``(hi, lo)``: mapping node ``lo`` (of ``lower``) derives an input of ``hi`` (of ``upper``)."""
    from selp.cdss.proql._spark import F, relation_of
    ins = g.inputs.filter(relation_of(F.col("m")) == upper).select(F.col("m").alias("hi"), "u")
    outs = g.deriv.filter(relation_of(F.col("m")) == lower).select(F.col("t").alias("u"), F.col("m").alias("lo"))
    return ins.join(outs, "u").select("hi", "lo").distinct()


def _extend(g: SparkGraph, d: AsrDef, rows: DataFrame, a: int, b: int, lo: int, hi: int, outer: bool) -> list[DataFrame]:
    """Extend rows covering levels ``a..b`` down to ``hi`` and up to ``lo``; every extension when
    ``outer`` (all subpaths), else only the complete ones."""
    from selp.cdss.proql._spark import F
    downs = [(rows, b)]
    cur = rows
    for i in range(b, hi):
        lk = _links(g, d.path[i], d.path[i + 1])
        cur = cur.join(lk, F.col(f"c{i}") == F.col("hi")).drop("hi").withColumnRenamed("lo", f"c{i + 1}")
        downs.append((cur, i + 1))
    if not outer:
        downs = downs[-1:]
    result = []
    for df, _ in downs:
        ups = [df]
        cur = df
        for i in range(a, lo, -1):
            lk = _links(g, d.path[i - 1], d.path[i])
            cur = cur.join(lk, F.col(f"c{i}") == F.col("lo")).drop("lo").withColumnRenamed("hi", f"c{i - 1}")
            ups.append(cur)
        result += ups if outer else ups[-1:]
    return result


def _pad(df: DataFrame, w: int) -> DataFrame:
    from selp.cdss.proql._spark import F
    return df.select(*[F.col(c) if c in df.columns else F.lit(None).cast("string").alias(c) for c in _cols(w)])


def compute_asr(g: SparkGraph, d: AsrDef, anchors: dict[int, DataFrame] | None = None) -> DataFrame:
    """The rows of ``d`` in ``g`` (``anchors``: only those through one of the given mapping
    nodes per level, the delta rule used by maintenance)."""
    from selp.cdss.proql._spark import DataFrame, F, reduce
    w, outer = d.width, d.kind == "outer"
    parts: list[DataFrame] = []
    levels = range(w) if (outer or anchors is not None) else [0]
    for i in levels:
        start = (anchors or {}).get(i) if anchors is not None else _nodes(g, d.path[i])
        if start is None:
            continue
        start = start.select(F.col("m").alias(f"c{i}"))
        if outer and anchors is None:  # all subpaths starting at level i (each generated once)
            parts += [_pad(x, w) for x in _extend(g, d, start, i, i, i, w - 1, True)[: w - i]]
        else:
            parts += [_pad(x, w) for x in _extend(g, d, start, i, i, 0, w - 1, outer)]
    if not parts:
        return g.spark.createDataFrame([], ", ".join(f"{c} string" for c in _cols(w)))
    return reduce(DataFrame.unionByName, parts).distinct()


def _write(spark: SparkSession, edir: Path, frames: dict[AsrDef, DataFrame]) -> list[dict]:
    """Write the ASRs of an epoch (temporary directory renamed into place, manifest last)."""
    final = edir / ASR_DIR
    tmp = temp_dir(".tmp-asr-", edir)
    try:
        entries = []
        for d, df in frames.items():
            path = tmp / f"{d.name}.parquet"
            df.write.mode("overwrite").parquet(str(path))
            entries.append({"name": d.name, "kind": d.kind, "path": list(d.path), "rows": _row_count(path)})
        (tmp / MANIFEST).write_text(json.dumps({"asrs": entries}, indent=2))
        if final.exists():
            shutil.rmtree(final)
        os.rename(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return entries


def read_manifest(edir: Path) -> list[dict]:
    """The ASRs stored with an epoch (empty when none)."""
    path = edir / ASR_DIR / MANIFEST
    if not path.exists():
        return []
    return json.loads(path.read_text())["asrs"]


def build_asrs(
    store: Store, spark: SparkSession, epoch: int | None = None, defs: list[AsrDef] | None = None,
    width: int = DEFAULT_WIDTH, kind: str = "inner",
) -> list[dict]:
    """Create the ASRs of an epoch (default: the latest exchange; ``defs`` default: the
    heuristic's choice) and return the manifest entries. Later exchanges maintain them."""
    from selp.cdss.proql._spark import load_epoch_graph
    if epoch is None:
        last = store.last_exchange()
        if last is None:
            raise SelpError(f"no exchange in {store.directory} yet; run `selp cdss exchange {store.directory} --peer P`")
        epoch = last.epoch
    defs = choose_asrs(store, epoch, width, kind) if defs is None else defs
    g = load_epoch_graph(spark, store, epoch)
    return _write(spark, store.epoch_dir(epoch), {d: compute_asr(g, d) for d in defs})


def maintain_asrs(store: Store, epoch: int, spark: SparkSession | None = None, say: Callable[[str], None] = lambda m: None) -> list[dict]:
    """Update exchange's hook, right after ``epoch`` is committed: carry the previous epoch's
    ASRs over to ``epoch`` by their deltas (module docstring). Does nothing (and starts no
    Spark) when the previous epoch has no ASRs; never raises."""
    from selp.cdss.proql._spark import F, load_epoch_graph
    try:
        prev = [e for e in (x.epoch for x in store.exchanges()) if e < epoch and read_manifest(store.epoch_dir(e))]
        if not prev:
            return []
        old_epoch = prev[-1]
        if spark is None:
            from selp.engines.spark_session import get_spark

            spark = get_spark()
        old = load_epoch_graph(spark, store, old_epoch)
        new = load_epoch_graph(spark, store, epoch)
        frames = {}
        for entry in read_manifest(store.epoch_dir(old_epoch)):
            d = AsrDef(tuple(entry["path"]), entry["kind"])
            rows = spark.read.parquet(str(store.epoch_dir(old_epoch) / ASR_DIR / f"{entry['name']}.parquet"))
            anchors = {}
            for i, mname in enumerate(d.path):
                on, nn = _nodes(old, mname), _nodes(new, mname)
                deleted = on.join(nn, "m", "left_anti")
                rows = rows.join(deleted.select(F.col("m").alias(f"c{i}")), f"c{i}", "left_anti")
                anchors[i] = nn.join(on, "m", "left_anti")
            frames[d] = rows.select(*_cols(d.width)).unionByName(compute_asr(new, d, anchors)).distinct()
        entries = _write(spark, store.epoch_dir(epoch), frames)
        say(f"maintained {len(entries)} access support relation(s) from epoch {old_epoch}")
        return entries
    except Exception as err:  # the exchange has committed: report, queries fall back to no ASR
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        say(f"warning: access support relations not maintained ({first}); queries on epoch {epoch} run without them")
        return []


# -- use -----------------------------------------------------------------------------------------
def attach_asrs(g: SparkGraph) -> SparkGraph:
    """``g`` with the ancestor edges of its epoch's ASRs (``g`` itself when it has none)."""
    from selp.cdss.proql._spark import DataFrame, F, reduce
    entries = read_manifest(g.epoch_dir)
    if not entries:
        return g
    covered, used, pairs = set(), [], []
    for e in entries:
        cols = _cols(len(e["path"]))
        rows = g.spark.read.parquet(str(g.epoch_dir / ASR_DIR / f"{e['name']}.parquet"))
        # a row's first node's outputs reach the inputs of every later node of the row in one
        # edge: the whole window in one round of the fixpoint (the intermediate nodes are
        # ancestors too, so edges to the bottom alone would not save a round)
        top = F.coalesce(*[F.col(c) for c in cols])
        pairs.append(rows.select(top.alias("top"), F.explode(F.array(*[F.col(c) for c in cols])).alias("bottom")))
        used.append(e["name"])
        if e["kind"] == "outer":
            covered |= set(e["path"])
    ends = reduce(DataFrame.unionByName, pairs).filter(F.col("bottom").isNotNull()).distinct()
    outs = g.deriv.select(F.col("m").alias("top"), "t")
    ins = g.inputs.select(F.col("m").alias("bottom"), "u")
    edges = [ends.join(outs, "top").join(ins, "bottom").select("t", "u")]
    return replace(g, asr_edges=edges, asr_used=used, asr_covered=covered, _edges=None)
