"""The provenance graph of a CDSS epoch as Spark DataFrames, read from the store's Parquet files.

The same graph as :mod:`.graph` (read that docstring for what the nodes and edges are), kept as
three relations so that ProQL can be evaluated by joins instead of pointer chasing:

``tuples(id, local, a_<i>..., k_<i>...)``
    one row per tuple node. ``id`` is the node's display text (``B(3,5)``, ``U(2,f_m3_c(2))``,
    exactly :class:`~.graph.TupleNode`'s ``str``), so results need no decoding and the relation
    is the text before the first ``(``. ``a_<i>`` holds the value of attribute number ``i``
    (:meth:`SparkGraph.attribute_columns`: attribute names across relations, numbered so that
    ``Name`` and ``name`` stay apart although Spark resolves columns case-insensitively) in selp's
    uniform string encoding (labeled nulls marked with NUL) and ``k_<i>`` its declared type (``int``
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

Every column is built by native column expressions from the ``P_m`` and ``R_o/R_l/R_i`` files,
with plans whose size does not grow with the number of relations and mappings (one scan of all
tuple files, one of all provenance files, the schema as broadcast lookup tables; see the comment
above :func:`load_epoch_graph`), all materialised once per epoch and cut from their lineage:
no Python UDF, and only paths inside the store are handed to Spark, so it runs on a cluster
whose executors see the store directory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from selp.cdss.compile import InternalNames
from selp.cdss.model import Mapping, MappingAtom
from selp.cdss.proql.graph import query_epoch
from selp.cdss.store import Store
from selp.engines.spark_frames import cut
from selp.errors import SelpError
from selp.language.ast import Var
from selp.values import SKOLEM_MARK, encode, format_value


def display(col: Column, is_int: Column) -> Column:
    """``format_value`` of an encoded column whose declared type is ``int`` where ``is_int``:
    labeled nulls lose their mark, strings are quoted (``\\`` and ``"`` escaped), ints stay."""
    marked = col.startswith(SKOLEM_MARK)
    quoted = F.concat(F.lit('"'), F.regexp_replace(F.regexp_replace(col, r"\\", r"\\\\"), '"', '\\\\"'), F.lit('"'))
    return F.when(marked, F.substring(col, 2, 1 << 30)).when(is_int, col).otherwise(quoted)


def node_text(name: Column, parts: Column) -> Column:
    """``name(p1,p2,...)`` from an array of displayed parts."""
    return F.concat(name, F.lit("("), F.array_join(parts, ","), F.lit(")"))


def relation_of(node: Column) -> Column:
    """The relation (tuple node) or mapping (mapping node) of a node's display text."""
    return F.substring_index(node, "(", 1)


@dataclass
class SparkGraph:
    """The provenance graph of one epoch on Spark (see the module docstring)."""

    spark: SparkSession
    epoch: int
    epoch_dir: Path
    tuple_rows: DataFrame  # (id, base, local, a_*, k_*): one row per tuple file row or head atom
    local_ids: DataFrame  # (id): the local contributions
    deriv: DataFrame
    inputs: DataFrame
    input_atoms: DataFrame
    universe: list[str]  # every attribute name of every relation, sorted: a_<i> is universe[i]
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
            t = self.tuple_rows
            keep = [F.first(c, ignorenulls=True).alias(c) for c in t.columns if c not in ("id", "base", "local")]
            self._tuples = cut(t.groupBy("id").agg(F.max("local").alias("local"), *keep), eager=True)
        return self._tuples

    def attribute_columns(self, attribute: str) -> tuple[str, str] | None:
        """The ``(a_<i>, k_<i>)`` columns of ``tuples`` for an attribute name (None: no relation
        has it)."""
        if attribute not in self.universe:
            return None
        i = self.universe.index(attribute)
        return f"a_{i}", f"k_{i}"

    def tuple_ids(self, relation: str | None) -> DataFrame:
        """``(id)``: the tuple nodes of ``relation`` (every one when None)."""
        if relation is None:
            return self.tuples.select("id")
        return self.tuple_rows.filter(F.col("base") == relation).select("id").distinct()

    @property
    def edges(self) -> DataFrame:
        """``(t, u)``: ``u`` is an input of a mapping node deriving ``t`` (one step back)."""
        if self._edges is None:
            self._edges = cut(self.deriv.join(self.inputs, "m").select("t", "u").distinct(), eager=True)
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


def load_spark_graph(spark: SparkSession, store: Store, peer: str | None = None) -> SparkGraph:
    """The graph of the epoch ``peer``'s instance reflects (default: the latest exchange)."""
    return load_epoch_graph(spark, store, query_epoch(store, peer))


# The loader below builds every relation with a plan whose size does not depend on the schema:
# one scan over all tuple files and one over all P_m files (the file's name says whose rows they
# are), and small lookup tables, joined by broadcast, that describe each relation's attributes and
# each mapping's atoms as data. Expressions per relation or per mapping would make a plan of
# thousands of operators at 100 peers (minutes of planning, and a plan the driver keeps).
_FILE = r"([^/]+)\.parquet(/[^/]*)?$"  # the relation of a file path (a file or Spark's directory)

_ARG = "struct<kind: string, idx: int, enc: string, shown: string, sk: array<int>>"


def _scan(spark: SparkSession, paths: list[Path], columns: list[str]) -> DataFrame:
    """Every file of ``paths`` as rows of the string ``columns`` (NULL where a file has no such
    column) plus ``_file``: the relation the row comes from."""
    schema = ", ".join(f"`{c}` string" for c in columns) or "`_none` string"
    df = spark.read.schema(schema).parquet(*(str(p) for p in paths))
    return df.select(*[F.col(f"`{c}`") for c in columns], F.regexp_extract(F.col("_metadata.file_path"), _FILE, 1).alias("_file"))


@contextlib.contextmanager
def _case_sensitive(spark: SparkSession) -> Iterator[None]:
    """Resolve column names case-sensitively while the graph is read and materialised: two
    relations may have attributes ``Name`` and ``name`` (and one P_m variables ``x`` and ``X``),
    which the scans' schemas must keep apart. Every frame is cut before this ends, so no later
    plan resolves these names again."""
    old = spark.conf.get("spark.sql.caseSensitive", "false")
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        yield
    finally:
        spark.conf.set("spark.sql.caseSensitive", old)


def _atom_args(m: Mapping, atom: MappingAtom, names: InternalNames) -> list[tuple]:
    """The ``_ARG`` structs of an atom of ``m``: a body variable (its 1-based position in the
    ``P_m`` row), an existential (the Skolem term the compiled program makes, over the
    frontier's positions) or a constant (encoded and displayed)."""
    pos_of = {v: i + 1 for i, v in enumerate(m.body_vars)}
    args: list[tuple] = []
    for t in atom.args:
        if isinstance(t, Var) and t in pos_of:
            args.append(("v", pos_of[t], None, None, None))
        elif isinstance(t, Var):
            args.append(("s", 0, None, names.skolem(m.name, t), [pos_of[v] for v in m.frontier]))
        else:
            args.append(("c", 0, encode(t.value), format_value(t.value), None))
    return args


def load_epoch_graph(spark: SparkSession, store: Store, epoch: int) -> SparkGraph:
    """The graph of a committed epoch (see the module docstring)."""
    compiled = store.compiled
    cdss, names = compiled.cdss, compiled.names
    edir = store.epoch_dir(epoch)

    key = (str(edir.resolve()), epoch, edir.stat().st_mtime_ns if edir.exists() else 0, id(spark))
    if key in _CACHE:  # a committed epoch never changes: reuse its graph within this session
        return _CACHE[key]

    def path(rel: str) -> Path:
        p = edir / f"{rel}.parquet"
        if not p.exists():
            raise SelpError(f"{p}: missing from the store (was the epoch garbage-collected meanwhile? run the command again)")
        return p

    attributes: dict[str, tuple[str, ...]] = {}
    types: dict[str, dict[str, str]] = {}
    for r in cdss.relations():
        base = names.base(r.ref)
        attributes[base] = tuple(r.attribute_names)
        cols = store.columns(names.relation(r.ref, "o"))
        types[base] = {a: t for a, (_, t) in zip(r.attribute_names, cols)}
    universe = sorted({a for attrs in attributes.values() for a in attrs})

    upos = {a: i + 1 for i, a in enumerate(universe)}  # 1-based: element_at

    def rel_info(base: str) -> tuple:
        """(kinds map, 1-based position in the relation of each universe attribute, 0 if none)."""
        at = {a: i + 1 for i, a in enumerate(attributes[base])}
        return types[base], [at.get(a, 0) for a in universe]

    def attribute_columns(enc: Column) -> list[Column]:
        """``a_<i>``/``k_<i>`` of every universe attribute, from the row's encoded
        arguments ``enc`` (relation order) and the joined ``kinds``/``where`` lookup columns."""
        out = []
        for i, a in enumerate(universe):
            at = F.col("where")[i]
            out.append(F.when(at > 0, F.element_at(enc, F.greatest(at, F.lit(1)))).alias(f"a_{i}"))
            out.append(F.when(at > 0, F.col("kinds")[F.lit(a)]).alias(f"k_{i}"))
        return out

    lookup = "kinds map<string,string>, where array<int>"  # the relation columns of the lookup tables
    with _case_sensitive(spark):
        # -- tuple files: R_o, R_l, R_i of every relation ---------------------------------------
        files, tpaths = [], []
        for r in cdss.relations():
            base = names.base(r.ref)
            kinds, where = rel_info(base)
            idx = [upos[a] for a in attributes[base]]  # the relation's attributes among the scan's columns
            ints = [types[base][a] == "int" for a in attributes[base]]
            for kind in ("o", "l", "i"):
                rel = names.relation(r.ref, kind)
                tpaths.append(path(rel))
                files.append((rel, base, kind == "l", idx, ints, kinds, where))
        fschema = "_file string, base string, local boolean, idx array<int>, ints array<boolean>, " + lookup
        flook = F.broadcast(spark.createDataFrame(files, fschema))
        trows = _scan(spark, tpaths, universe).join(flook, "_file")
        allcols = F.array(*[F.col(f"`{a}`") for a in universe]) if universe else F.array().cast("array<string>")
        enc = F.transform(F.col("idx"), lambda i: F.element_at(allcols, i))
        trows = trows.select(F.col("base"), F.col("local"), F.col("ints"), F.col("kinds"), F.col("where"), enc.alias("enc"))
        shown = F.transform(F.col("enc"), lambda x, j: display(x, F.col("ints")[j]))
        tfile_rows = trows.select(node_text(F.col("base"), shown).alias("id"), "base", "local", *attribute_columns(F.col("enc")))

        # -- provenance files: one P_m per mapping, its rows instantiating the mapping's atoms ------
        pvars = sorted({c for m in cdss.mappings for c, _ in store.columns(names.provenance(m.name))})
        maps, atoms, ppaths = [], [], []
        for m in cdss.mappings:
            prel = names.provenance(m.name)
            ppaths.append(path(prel))
            pcols = store.columns(prel)
            maps.append((prel, m.name, [pvars.index(c) + 1 for c, _ in pcols], [t == "int" for _, t in pcols]))
            for out, group in ((False, m.body), (True, m.head)):
                for pos, atom in enumerate(group):
                    base = names.base(atom.relation)
                    atoms.append((m.name, out, pos, base, _atom_args(m, atom, names), *rel_info(base)))
        if not ppaths:  # no mappings: no mapping nodes
            patoms = spark.createDataFrame([], f"m string, out boolean, pos int, node string, base string, enc array<string>, {lookup}")
        else:
            mschema = "_file string, mapping string, bidx array<int>, bints array<boolean>"
            mlook = F.broadcast(spark.createDataFrame(maps, mschema))
            aschema = f"mapping string, out boolean, pos int, base string, args array<{_ARG}>, {lookup}"
            alook = F.broadcast(spark.createDataFrame(atoms, aschema))
            pcolsall = F.array(*[F.col(f"`{c}`") for c in pvars])
            prows = _scan(spark, ppaths, pvars).join(mlook, "_file")
            penc = F.transform(F.col("bidx"), lambda i: F.element_at(pcolsall, i))
            prows = prows.select("mapping", penc.alias("penc"), "bints")
            pshown = F.transform(F.col("penc"), lambda x, j: display(x, F.col("bints")[j]))
            prows = prows.select("mapping", "penc", pshown.alias("pshown"))
            prows = prows.select("*", node_text(F.col("mapping"), F.col("pshown")).alias("m"))
            pa = prows.join(alook, "mapping")

            def skolem(a: Column) -> Column:
                return node_text(a["shown"], F.transform(a["sk"], lambda i: F.element_at(F.col("pshown"), i)))

            arg_shown = F.transform(
                F.col("args"),
                lambda a: F.when(a["kind"] == "v", F.element_at(F.col("pshown"), a["idx"]))
                .when(a["kind"] == "c", a["shown"])
                .otherwise(skolem(a)),
            )
            arg_enc = F.transform(
                F.col("args"),
                lambda a: F.when(a["kind"] == "v", F.element_at(F.col("penc"), a["idx"]))
                .when(a["kind"] == "c", a["enc"])
                .otherwise(F.concat(F.lit(SKOLEM_MARK), skolem(a))),
            )
            node = node_text(F.col("base"), arg_shown)
            patoms = pa.select("m", "out", "pos", node.alias("node"), "base", arg_enc.alias("enc"), "kinds", "where")
        # Materialised once per epoch and cut from their lineage (three jobs): every fixpoint round
        # joins these, and the relations below are narrow filters of them. ``patoms`` has one row per
        # (m, out, pos), so an input atom occurs once: a mapping's value multiplies each input atom once.
        patoms = cut(patoms.dropDuplicates(["m", "out", "pos"]), eager=True)  # the rest follows from these
        deriv = patoms.filter("out").select(F.col("node").alias("t"), "m")  # (t, m) twice: a repeated head atom
        atoms_df = patoms.filter(~F.col("out")).select("m", F.col("node").alias("u"), "pos")
        inp = cut(atoms_df.select("m", "u").distinct(), eager=True)
        # a derived tuple is a node even if (rejected, distrusted) it is in no instance file
        heads = patoms.filter("out").select(
            F.col("node").alias("id"), "base", F.lit(False).alias("local"), *attribute_columns(F.col("enc"))
        )
        tuple_rows = cut(tfile_rows.unionByName(heads), eager=True)
        local_ids = tuple_rows.filter("local").select("id").distinct()
    g = SparkGraph(spark, epoch, edir, tuple_rows, local_ids, deriv, inp, atoms_df, universe)
    if len(_CACHE) >= 4:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = g
    return g


_CACHE: dict[tuple, SparkGraph] = {}
