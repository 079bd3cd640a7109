"""The provenance graph of a CDSS epoch as Spark DataFrames, read from the store's Parquet files.

The same graph as :mod:`.graph` (read that docstring for what the nodes and edges are), kept as
three relations so that ProQL can be evaluated by joins instead of pointer chasing:

``tuples(id, local, a_<attr>..., k_<attr>...)``
    one row per tuple node. ``id`` is the node's display text (``B(3,5)``, ``U(2,f_m3_c(2))``,
    exactly :class:`~.graph.TupleNode`'s ``str``), so results need no decoding and the relation
    is the text before the first ``(``. ``a_<attr>`` holds the attribute's value in selp's uniform
    string encoding (labeled nulls marked with NUL) and ``k_<attr>`` its declared type (``int``
    or ``str``); both are NULL when the node's relation has no such attribute (a heterogeneous
    variable), which makes every comparison on it false, as in the local engine.
``deriv(t, m)``
    mapping node ``m`` (display text ``m4(3,5,2)``: the ``P_m`` row) has tuple ``t`` among its
    outputs (head atoms instantiated, existential variables as the Skolem values the compiled
    program makes: ``f_m_z(frontier)``).
``inputs(m, u)``
    tuple ``u`` is among ``m``'s inputs (body atoms instantiated).
``input_atoms(m, u, pos)``
    the same per body atom ``pos``: a mapping whose body reads one tuple twice multiplies its
    value twice (WEIGHT adds it twice), as the local engine does.

Every column is built by native column expressions from the ``P_m`` and ``R_o/R_l/R_i`` files:
no Python UDF, and only paths inside the store are handed to Spark, so it runs on a cluster
whose executors see the store directory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from selp.cdss.proql.graph import query_epoch
from selp.cdss.store import Store
from selp.errors import SelpError
from selp.language.ast import Const, Var
from selp.values import SKOLEM_MARK, encode, format_value


def _cut(df: DataFrame) -> DataFrame:
    """Materialise ``df`` on the executors and replace its plan by a scan of the blocks."""
    return df.localCheckpoint(eager=True)


def display(col: Column, typ: str) -> Column:
    """``format_value`` of an encoded column of type ``typ``: labeled nulls lose their mark,
    strings are quoted (``\\`` and ``"`` escaped), ints stay as they are."""
    marked = col.startswith(SKOLEM_MARK)
    stripped = F.substring(col, 2, 1 << 30)
    if typ == "int":
        return F.when(marked, stripped).otherwise(col)
    quoted = F.concat(F.lit('"'), F.regexp_replace(F.regexp_replace(col, r"\\", r"\\\\"), '"', '\\\\"'), F.lit('"'))
    return F.when(marked, stripped).otherwise(quoted)


def node_text(name: str, parts: list[Column]) -> Column:
    """``name(p1,p2,...)`` from already displayed parts."""
    if not parts:
        return F.lit(f"{name}()")
    return F.concat(F.lit(name + "("), F.concat_ws(",", *parts), F.lit(")"))


def relation_of(node: Column) -> Column:
    """The relation (tuple node) or mapping (mapping node) of a node's display text."""
    return F.substring_index(node, "(", 1)


@dataclass
class SparkGraph:
    """The provenance graph of one epoch on Spark (see the module docstring)."""

    spark: SparkSession
    epoch: int
    epoch_dir: Path
    _tuple_parts: dict[str, list[DataFrame]]  # relation -> its rows' tuple columns (per file)
    local_ids: DataFrame  # (id): the local contributions
    deriv: DataFrame
    inputs: DataFrame
    input_atoms: DataFrame
    attributes: dict[str, tuple[str, ...]]  # relation -> attribute names
    types: dict[str, dict[str, str]]  # relation -> attribute -> int/str
    mappings: set[str]
    asr_edges: list[DataFrame] = field(default_factory=list)  # extra (t, u) ancestor edges
    asr_used: list[str] = field(default_factory=list)
    asr_covered: set[str] = field(default_factory=set)  # mappings whose edges an outer ASR holds
    _edges: DataFrame | None = None
    _tuples: DataFrame | None = None

    @property
    def tuples(self) -> DataFrame:
        """Every tuple node with its attributes (built on first use: only attribute conditions
        and patterns without a relation need it)."""
        if self._tuples is None:
            t = reduce(DataFrame.unionByName, [df for parts in self._tuple_parts.values() for df in parts])
            keep = [F.first(c, ignorenulls=True).alias(c) for c in t.columns if c not in ("id", "local")]
            self._tuples = _cut(t.groupBy("id").agg(F.max("local").alias("local"), *keep))
        return self._tuples

    def tuple_ids(self, relation: str | None) -> DataFrame:
        """``(id)``: the tuple nodes of ``relation`` (every one when None)."""
        if relation is None:
            return self.tuples.select("id")
        parts = [df.select("id") for df in self._tuple_parts.get(relation, [])]
        if not parts:
            return self.spark.createDataFrame([], "id string")
        return reduce(DataFrame.unionByName, parts).distinct()

    @property
    def edges(self) -> DataFrame:
        """``(t, u)``: ``u`` is an input of a mapping node deriving ``t`` (one step back)."""
        if self._edges is None:
            self._edges = _cut(self.deriv.join(self.inputs, "m").select("t", "u").distinct())
        return self._edges

    def ancestor_edges(self) -> DataFrame:
        """The edges the ``<-+`` fixpoint follows: one step, plus the access support relations'
        multi-step edges (each a subset of the transitive closure, so the result is the same
        and the number of rounds shrinks by the ASRs' width)."""
        if not self.asr_edges:
            return self.edges
        base = self.edges
        if self.asr_covered:  # an outer ASR holds these mappings' one-step edges itself
            d = self.deriv.filter(~relation_of(F.col("m")).isin(sorted(self.asr_covered)))
            base = d.join(self.inputs, "m").select("t", "u")
        return reduce(DataFrame.unionByName, [base, *self.asr_edges]).distinct()


def _value(name: str, typ: str, col: Column) -> tuple[Column, Column]:
    """(encoded, displayed) of a P_m column."""
    return col, display(col, typ)


def _atom_columns(atom, env: dict, names) -> list[tuple[Column, Column, str]]:
    """(encoded, displayed, type) per argument of an instantiated atom."""
    out = []
    for t in atom.args:
        if isinstance(t, Var):
            out.append(env[t])
        else:
            v = t.value if isinstance(t, Const) else t
            out.append((F.lit(encode(v)), F.lit(format_value(v)), "int" if isinstance(v, int) else "str"))
    return out


def load_spark_graph(spark: SparkSession, store: Store, peer: str | None = None) -> SparkGraph:
    """The graph of the epoch ``peer``'s instance reflects (default: the latest exchange)."""
    return load_epoch_graph(spark, store, query_epoch(store, peer))


def load_epoch_graph(spark: SparkSession, store: Store, epoch: int) -> SparkGraph:
    """The graph of a committed epoch (see the module docstring)."""
    compiled = store.compiled
    cdss, names = compiled.cdss, compiled.names
    edir = store.epoch_dir(epoch)

    key = (str(edir.resolve()), epoch, edir.stat().st_mtime_ns if edir.exists() else 0, id(spark))
    if key in _CACHE:  # a committed epoch never changes: reuse its graph within this session
        return _CACHE[key]

    def read(rel: str) -> DataFrame:
        path = edir / f"{rel}.parquet"
        if not path.exists():
            raise SelpError(f"{path}: missing from the store (was the epoch garbage-collected meanwhile? run the command again)")
        # the schema is known (every column a string): no footer reading to infer it
        schema = ", ".join(f"`{c}` string" for c, _ in store.columns(rel))
        return spark.read.schema(schema).parquet(str(path)) if schema else spark.read.parquet(str(path))

    attributes: dict[str, tuple[str, ...]] = {}
    types: dict[str, dict[str, str]] = {}
    for r in cdss.relations():
        base = names.base(r.ref)
        attributes[base] = tuple(r.attribute_names)
        cols = store.columns(names.relation(r.ref, "o"))
        types[base] = {a: t for a, (_, t) in zip(r.attribute_names, cols)}
    all_attrs = sorted({a for attrs in attributes.values() for a in attrs})

    def tuple_row(base: str, encoded: list[Column], shown: list[Column], local: Column) -> list[Column]:
        """The columns of ``tuples`` for one relation's rows."""
        cols = [node_text(base, shown).alias("id"), local.alias("local")]
        attrs = attributes[base]
        for a in all_attrs:
            if a in attrs:
                i = attrs.index(a)
                cols += [encoded[i].alias(f"a_{a}"), F.lit(types[base][a]).alias(f"k_{a}")]
            else:
                cols += [F.lit(None).cast("string").alias(f"a_{a}"), F.lit(None).cast("string").alias(f"k_{a}")]
        return cols

    parts: dict[str, list[DataFrame]] = {}
    local_parts: list[DataFrame] = []
    for r in cdss.relations():
        base = names.base(r.ref)
        for kind in ("o", "l", "i"):
            rel = names.relation(r.ref, kind)
            df = read(rel)
            cols = [c for c, _ in store.columns(rel)]
            enc = [F.col(c) for c in cols]
            shown = [display(F.col(c), types[base][a]) for c, a in zip(cols, attributes[base])]
            parts.setdefault(base, []).append(df.select(*tuple_row(base, enc, shown, F.lit(kind == "l"))))
            if kind == "l":
                local_parts.append(df.select(node_text(base, shown).alias("id")))
    derivs: list[DataFrame] = []
    inputs: list[DataFrame] = []
    for m in cdss.mappings:
        prel = names.provenance(m.name)
        pdf = read(prel)
        pcols = store.columns(prel)
        env = {v: (F.col(c), display(F.col(c), t), t) for v, (c, t) in zip(m.body_vars, pcols)}
        mid = node_text(m.name, [env[v][1] for v in m.body_vars]).alias("m")
        frontier_text = [env[v][1] for v in m.frontier]
        for z in m.existentials:
            text = node_text(names.skolem(m.name, z), frontier_text)
            env[z] = (F.concat(F.lit(SKOLEM_MARK), text), text, "str")
        for pos, atom in enumerate(m.body):
            base = names.base(atom.relation)
            cols = _atom_columns(atom, env, names)
            inputs.append(pdf.select(mid, node_text(base, [c[1] for c in cols]).alias("u"), F.lit(pos).alias("pos")))
        for atom in m.head:
            base = names.base(atom.relation)
            cols = _atom_columns(atom, env, names)
            derivs.append(pdf.select(node_text(base, [c[1] for c in cols]).alias("t"), mid))
            # a derived tuple is a node even if (rejected, distrusted) it is in no instance file
            parts.setdefault(base, []).append(pdf.select(*tuple_row(base, [c[0] for c in cols], [c[1] for c in cols], F.lit(False))))
    empty_d = spark.createDataFrame([], "t string, m string")
    empty_i = spark.createDataFrame([], "m string, u string, pos int")
    # Materialised once per epoch and cut from their lineage: the plans above union a scan and
    # a projection (regex display expressions) per relation file and per mapping, thousands of
    # operators at 100 peers; every fixpoint round would otherwise carry, analyse and record
    # (UI plan info) that whole tree again, which filled the driver heap on a 100-peer chain.
    deriv = _cut(reduce(DataFrame.unionByName, derivs, empty_d).distinct())
    atoms = _cut(reduce(DataFrame.unionByName, inputs, empty_i).distinct())
    inp = _cut(atoms.select("m", "u").distinct())
    local_ids = _cut(reduce(DataFrame.unionByName, local_parts, spark.createDataFrame([], "id string")).distinct())
    g = SparkGraph(spark, epoch, edir, parts, local_ids, deriv, inp, atoms, attributes, types, {m.name for m in cdss.mappings})
    if len(_CACHE) >= 4:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = g
    return g


_CACHE: dict[tuple, SparkGraph] = {}
