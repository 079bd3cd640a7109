"""The Spark engine of ProQL: projection by joins over the provenance tables, annotation as a
fixpoint on DataFrames. Gives the same answers as the local engine (:mod:`.evaluate`, whose
docstring defines the semantics); this docstring says only how.

**Projection.** A FOR path is matched as a chain of joins over the graph relations of
:mod:`.spark_graph`: the valuations are a DataFrame with one column ``v_<var>`` per variable
(node display texts) and a cursor ``_c``; the first node of a path is either the bound variable's
column or the tuples of its relation (the FOR bindings: the only places the graph is entered),
each ``<-``/``<m``/``<$p`` step is a join with ``deriv`` then ``inputs``, a relation in a node
pattern is a filter on the node text, a bound variable an equality filter.
``<-+`` is an **iterative reachability fixpoint** (semi-naive: each round joins only the pairs
found in the previous round with the edges, minus the pairs already known) over
``(start, ancestor)`` pairs, started from the distinct cursor values only, so only what is
reachable from the FOR bindings is touched, a cycle ends the iteration (no new pair) and the
work grows with the number of reachable nodes, not the number of paths. Every round's result is
cut from its lineage (:func:`selp.engines.spark_frames.cut`). Access support relations (:mod:`.asr`) add
multi-step edges to this fixpoint: fewer rounds, the same closure.

WHERE conditions are native column expressions (comparisons with the engines' semantics:
labeled nulls equal only themselves and are never ordered, an int never meets a string); a path
in WHERE becomes a flag joined on the variables it shares with the valuation. INCLUDE PATH
matches the path again per valuation, recording the mapping nodes of each step; ``<-+`` in an
include adds every mapping node on a derivation path between its two ends (all derivations of
the ancestors when the far end is ``[]``; otherwise those with an input forward-reachable from
the far end, a second fixpoint). G′ is ``gout(m, t)`` (included derivations); the inputs of an
included mapping node (its siblings) are in G′ through ``inputs``.

**Annotation.** Leaves (local tuples and tuple nodes with no derivation in G′) get their value
from the ``ASSIGNING EACH leaf_node`` CASEs translated to a ``when`` chain; mapping functions
likewise. Then Kleene iteration from 0 on DataFrames, over all of G′ (which the
projection built from the FOR bindings; it is not narrowed further to what the returned nodes
depend on, as the local engine does): a mapping node's value is the product of
its inputs' values (a group-by aggregate), a tuple's the sum of its leaf value and its
derivations' values (another aggregate), until no value changes. The semirings with a native
column representation iterate on Spark:

=================  ============  ==============  ==============  =========
semiring           column        plus            times           zero
=================  ============  ==============  ==============  =========
DERIVABILITY/TRUST boolean       bool_or         bool_and        false
WEIGHT (tropical)  double        min             sum             +inf
CONFIDENTIALITY    int level     min             max             4 (``0``)
LINEAGE            array<str>    array union     union, ⊥ wins   NULL (⊥)
=================  ============  ==============  ==============  =========

The first three are absorptive with a total order: the iteration is a min/max-aggregate
fixpoint reached after at most (longest acyclic path) rounds; LINEAGE is idempotent over a
finite set of tokens, so it converges too. **COUNT, POLYNOMIAL and PROBABILITY** (values that
are not columns: infinite counts on cycles, N[X] expressions, event DNFs) are evaluated on the
driver by the local engine's fixpoint over G′ collected from Spark, with the leaf values already
chosen on Spark; G′ larger than :data:`MAX_DRIVER_NODES` nodes is refused with a message naming
the native semirings. This is a decision of ours: these semirings are for inspecting
provenance, whose useful size is small, and their values grow with the number of derivations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from selp.cdss.proql import ast
from selp.cdss.proql.evaluate import Subgraph, annotate, mapping_function
from selp.cdss.proql.graph import MappingNode, TupleNode
from selp.cdss.proql.parser import ProqlError
from selp.cdss.proql.semirings import Semiring, probability
from selp.cdss.proql.spark_graph import SparkGraph, relation_of
from selp.engines.spark_frames import cut, release
from selp.errors import SelpError
from selp.values import SKOLEM_MARK, encode

MAX_DRIVER_NODES = 200_000
MAX_ROUNDS = 100_000
NATIVE = ("DERIVABILITY", "TRUST", "WEIGHT", "CONFIDENTIALITY", "LINEAGE")


def _key(var: str) -> str:
    """``var`` as a column-name part no other variable shares, even without case: Spark resolves
    column names case-insensitively by default, so ``$x`` and ``$X`` would be one column (the
    mask marks the upper-case letters)."""
    mask = sum(1 << i for i, ch in enumerate(var) if ch.isupper())
    return f"{var.lower()}_{mask:x}"


def _v(var: str) -> str:
    """The column of variable ``var``'s bindings."""
    return f"v_{_key(var)}"


# -- reachability ------------------------------------------------------------------------------
@dataclass
class Stats:
    """What the engine did, for ``--explain`` and the benchmarks."""

    rounds: list[tuple[str, int]] = field(default_factory=list)  # (fixpoint, rounds)
    plan: list[str] = field(default_factory=list)
    asrs: list[str] = field(default_factory=list)  # the ASRs a fixpoint followed


def closure(start: DataFrame, edges: DataFrame, stats: Stats, what: str) -> DataFrame:
    """``(s, a)``: ``a`` is reachable from ``s`` in one or more steps over ``edges(t, u)``
    (``t`` -> ``u``), for the distinct ``s`` of ``start``; semi-naive, one cut per round."""
    e = edges.select(F.col("t").alias("a"), F.col("u").alias("b"))
    first = start.select("s").distinct().join(edges, F.col("s") == F.col("t")).select("s", F.col("u").alias("a")).distinct()
    return _semi_naive(cut(first, eager=True), lambda f: f.join(e, "a").select("s", F.col("b").alias("a")), ["s", "a"], stats, what)


def closure_set(start: DataFrame, edges: DataFrame, stats: Stats, what: str) -> DataFrame:
    """``(a)``: the nodes reachable from some ``s`` of ``start`` in zero or more steps (the set
    version of :func:`closure`, for an include path whose far end is ``[]``: no pairs needed)."""
    e = edges.select(F.col("t").alias("a"), F.col("u").alias("b"))
    first = cut(start.select(F.col("s").alias("a")).distinct(), eager=True)
    return _semi_naive(first, lambda f: f.join(e, "a").select(F.col("b").alias("a")), ["a"], stats, what)


def _semi_naive(first: DataFrame, step, keys: list[str], stats: Stats, what: str) -> DataFrame:
    """Iterate ``step`` from ``first`` until no new row; the pieces found are kept apart (each
    cut once) and unioned at the end, so a round costs one job on the new rows only."""
    pieces = [first]
    frontier = first
    orphan = None  # a frontier merged out of ``pieces``: freed once the next round has read it
    rounds = 1
    while True:
        known = reduce(DataFrame.unionByName, pieces)
        nxt = cut(step(frontier).distinct().join(known, keys, "left_anti"), eager=True)
        if orphan is not None:
            release(orphan)  # a long fixpoint would otherwise keep every round's blocks
            orphan = None
        if nxt.isEmpty():
            release(nxt)
            break
        rounds += 1
        if rounds > MAX_ROUNDS:
            raise SelpError(f"{what}: no fixpoint after {rounds} rounds")
        pieces.append(nxt)
        if len(pieces) >= 16:  # keep the plans short: merge the pieces every 16 rounds
            merged = cut(reduce(DataFrame.unionByName, pieces), eager=True)
            for piece in pieces[:-1]:
                release(piece)
            orphan = pieces[-1]  # still the next round's frontier
            pieces = [merged]
        frontier = nxt
    stats.rounds.append((what, rounds))
    out = cut(reduce(DataFrame.unionByName, pieces), eager=True)
    for piece in pieces:
        release(piece)
    return out


# -- the matcher ------------------------------------------------------------------------------
class SparkMatcher:
    """Path matching, conditions and includes over a :class:`SparkGraph` (module docstring)."""

    def __init__(self, g: SparkGraph, mapvars: set[str], stats: Stats) -> None:
        self.g = g
        self.mapvars = mapvars
        self.stats = stats
        self._anc_edges: DataFrame | None = None

    @property
    def anc_edges(self) -> DataFrame:
        if self._anc_edges is None:
            self._anc_edges = self.g.ancestor_edges().cache()
            if self.g.asr_used:
                self.stats.asrs = list(self.g.asr_used)
                self.stats.plan.append(f"<-+ fixpoints follow the one-step edges plus ASR(s) {', '.join(self.g.asr_used)}")
        return self._anc_edges

    def _pattern(self, v: DataFrame, p: ast.NodePattern) -> DataFrame:
        if p.relation is not None:
            v = v.filter(relation_of(F.col("_c")) == p.relation)
        if p.var is not None:
            if _v(p.var) in v.columns:
                v = v.filter(F.col(_v(p.var)) == F.col("_c"))
            else:
                v = v.withColumn(_v(p.var), F.col("_c"))
        return v

    def _start(self, v: DataFrame, p: ast.NodePattern) -> DataFrame:
        if p.var is not None and _v(p.var) in v.columns:
            v = v.withColumn("_c", F.col(_v(p.var)))
        else:
            v = v.crossJoin(self.g.tuple_ids(p.relation).withColumnRenamed("id", "_c"))
        return self._pattern(v, p)

    def _step(self, v: DataFrame, step: ast.Step, record: str | None = None) -> DataFrame:
        if step.kind == "plus":
            pairs = closure(v.select(F.col("_c").alias("s")), self.anc_edges, self.stats, "<-+")
            v = v.join(pairs, F.col("_c") == F.col("s")).drop("_c", "s").withColumnRenamed("a", "_c")
            if record is not None:  # for an include: the far end, paired with _t
                v = v.withColumn(record, F.lit(None).cast("string"))
            return v
        d = self.g.deriv
        if step.kind == "mapping":
            d = d.filter(relation_of(F.col("m")) == step.name)
        v = v.join(d, F.col("_c") == F.col("t")).drop("t", "_c")
        if step.kind == "mapvar":
            if _v(step.name) in v.columns:
                v = v.filter(F.col(_v(step.name)) == F.col("m"))
            else:
                v = v.withColumn(_v(step.name), F.col("m"))
        v = v.join(self.g.inputs, "m").withColumnRenamed("u", "_c")
        if record is not None:
            v = v.withColumnRenamed("m", record)
        else:
            v = v.drop("m")
        return v

    def match(self, path: ast.Path, v: DataFrame) -> DataFrame:
        """Every extension of the valuations ``v`` matching ``path`` (distinct)."""
        v = self._start(v, path.nodes[0])
        for step, pat in zip(path.steps, path.nodes[1:]):
            v = self._pattern(self._step(v, step), pat).distinct()
        return v.drop("_c").distinct()

    # -- conditions --------------------------------------------------------------------------
    def condition(self, c: ast.Condition, v: DataFrame, tag: list[int]) -> tuple[DataFrame, Column]:
        """``v`` (with any columns the condition needs joined on) and the condition's column."""
        if isinstance(c, (ast.And, ast.Or)):
            cols = []
            for p in c.parts:
                v, col = self.condition(p, v, tag)
                cols.append(col)
            return v, reduce((lambda a, b: a & b) if isinstance(c, ast.And) else (lambda a, b: a | b), cols)
        if isinstance(c, ast.Not):
            v, col = self.condition(c.part, v, tag)
            return v, ~col
        if isinstance(c, ast.Membership):
            if c.var in self.mapvars:  # a mapping node is in no relation
                return v, F.lit(False)
            return v, relation_of(F.col(_v(c.var))) == c.relation
        if isinstance(c, ast.PathCondition):
            tag[0] += 1
            flag = f"_flag{tag[0]}"
            shared = sorted({_v(n.var) for n in c.path.nodes if n.var} & set(v.columns))
            shared += sorted({_v(s.name) for s in c.path.steps if s.kind == "mapvar"} & set(v.columns))
            if not shared:  # nothing shared with the valuation: one existence test for all
                return v, F.lit(not self.match(c.path, self.g.spark.range(1).select()).isEmpty())
            found = self.match(c.path, v.select(*shared).distinct()).select(*shared).distinct().withColumn(flag, F.lit(True))
            return v.join(found, shared, "left"), F.coalesce(F.col(flag), F.lit(False))
        return self.comparison(c, v)

    def _attr(self, v: DataFrame, a: ast.AttrRef) -> tuple[DataFrame, Column, Column]:
        """(v, encoded value, type) of ``$x.a`` (NULL when $x's relation has no ``a``)."""
        cols = self.g.attribute_columns(a.attribute)
        n = cols[0][2:] if cols else f"none_{a.attribute.lower()}"  # numbered: Name and name differ
        enc, typ = f"_a_{_key(a.var)}_{n}", f"_k_{_key(a.var)}_{n}"
        if enc not in v.columns:
            if cols is not None:
                t = self.g.tuples.select(F.col("id").alias(_v(a.var)), F.col(cols[0]).alias(enc), F.col(cols[1]).alias(typ))
                v = v.join(t, _v(a.var), "left")
            else:
                v = v.withColumn(enc, F.lit(None).cast("string")).withColumn(typ, F.lit(None).cast("string"))
        return v, F.col(enc), F.col(typ)

    def comparison(self, c: ast.Comparison, v: DataFrame) -> tuple[DataFrame, Column]:
        """A comparison with the engines' semantics (see :func:`selp.engines.joins.compare`)."""
        left, right, op = c.left, c.right, c.op
        op = "!=" if op == "<>" else op
        for x, y in ((left, right), (right, left)):  # $p = m1, $x = $y on nodes
            if isinstance(x, ast.VarRef):
                if isinstance(y, ast.Literal):
                    if x.var in self.mapvars:
                        same = relation_of(F.col(_v(x.var))) == str(y.value)
                        return v, same if op == "=" else ~same if op == "!=" else F.lit(False)
                    return v, F.lit(op == "!=")  # a tuple node never equals a literal
                if isinstance(y, ast.VarRef):
                    same = F.col(_v(x.var)) == F.col(_v(y.var))
                    return v, same if op == "=" else ~same if op == "!=" else F.lit(False)
                return v, F.lit(op == "!=")
        operands = []
        for o in (left, right):
            if isinstance(o, ast.AttrRef):
                v, enc, typ = self._attr(v, o)
                operands.append((enc, typ, None))
            else:
                val = o.value
                if isinstance(val, bool) or isinstance(val, float) and not float(val).is_integer():
                    operands.append((F.lit(str(val)), F.lit("float"), val))
                else:
                    val = int(val) if isinstance(val, float) else val
                    operands.append((F.lit(encode(val)), F.lit("int" if isinstance(val, int) else "str"), val))
        (a, ka, _), (b, kb, _) = operands
        present = a.isNotNull() & b.isNotNull()
        nulls = a.startswith(SKOLEM_MARK) | b.startswith(SKOLEM_MARK)
        numeric = ((ka == "int") | (ka == "float")) & ((kb == "int") | (kb == "float"))
        num_a, num_b = a.cast("double"), b.cast("double")
        if op in ("=", "!="):
            eq = F.when(nulls, a == b).when(numeric, num_a == num_b).otherwise((ka == kb) & (a == b))
            col = eq if op == "=" else ~eq
            return v, F.coalesce(present & col, F.lit(False))
        cmp = {"<": lambda x, y: x < y, "<=": lambda x, y: x <= y, ">": lambda x, y: x > y, ">=": lambda x, y: x >= y}[op]
        ordered = F.when(nulls, F.lit(False)).when(numeric, cmp(num_a, num_b)).otherwise((ka == "str") & (kb == "str") & cmp(a, b))
        return v, F.coalesce(present & ordered, F.lit(False))

    # -- includes ----------------------------------------------------------------------------
    def include(self, path: ast.Path, v: DataFrame) -> tuple[DataFrame, DataFrame]:
        """(``gout(m, t)``: the derivations ``path`` adds to G′ over all valuations, the start
        nodes of a step-less path)."""
        bound = sorted({_v(n.var) for n in path.nodes if n.var} | {_v(s.name) for s in path.steps if s.kind == "mapvar"})
        w = v.select(*[b for b in bound if b in v.columns]).distinct()
        w = self._start(w, path.nodes[0])
        empty = self.g.spark.createDataFrame([], "m string, t string")
        if not path.steps:
            return empty, w.select(F.col("_c").alias("t")).distinct()
        last = len(path.steps) - 1
        for i, (step, pat) in enumerate(zip(path.steps, path.nodes[1:])):
            w = w.withColumn(f"_t{i}", F.col("_c"))
            if i == last and step.kind == "plus" and pat.var is None and pat.relation is None:
                # ... <-+ []: handled below from the starts alone, no (start, ancestor) pairs; a
                # start without a derivation matches nothing
                w = w.join(self.g.deriv.select(F.col("t").alias("_c")).distinct(), "_c", "left_semi")
                break
            w = self._pattern(self._step(w, step, record=f"_m{i}"), pat).withColumn(f"_u{i}", F.col("_c")).distinct()
        outs = []
        for i, step in enumerate(path.steps):
            if step.kind != "plus":
                outs.append(w.select(F.col(f"_m{i}").alias("m"), F.col(f"_t{i}").alias("t")))
                continue
            far = path.nodes[i + 1]
            if far.var is None and far.relation is None and i == last:  # []: every ancestor is an end
                back = closure_set(w.select(F.col(f"_t{i}").alias("s")), self.anc_edges, self.stats, "INCLUDE <-+ []")
                outs.append(self.g.deriv.join(back.withColumnRenamed("a", "t"), "t").select("m", "t"))
                continue
            pairs = w.select(F.col(f"_t{i}").alias("s"), F.col(f"_u{i}").alias("e")).distinct()
            if far.var is None and far.relation is None:  # []: every ancestor is an end
                back = closure_set(pairs.select("s"), self.anc_edges, self.stats, "INCLUDE <-+ []")
                outs.append(self.g.deriv.join(back.withColumnRenamed("a", "t"), "t").select("m", "t"))
                continue
            back = closure(pairs.select("s"), self.anc_edges, self.stats, "INCLUDE <-+ (back)")
            back = back.unionByName(pairs.select("s", F.col("s").alias("a"))).distinct()
            fwd_edges = self.anc_edges.select(F.col("u").alias("t"), F.col("t").alias("u"))
            fwd = closure(pairs.select(F.col("e").alias("s")), fwd_edges, self.stats, "INCLUDE <-+ (forward)")
            fwd = fwd.unionByName(pairs.select(F.col("e").alias("s"), F.col("e").alias("a"))).distinct()
            # (t, y): y is forward-reachable from an end paired with t
            reach = pairs.join(fwd.withColumnRenamed("s", "e"), "e").select("s", F.col("a").alias("y")).distinct()
            cand = back.withColumnRenamed("a", "t").join(self.g.deriv, "t").join(self.g.inputs, "m")
            hit = cand.join(reach, (cand["s"] == reach["s"]) & (cand["u"] == reach["y"]), "left_semi")
            outs.append(hit.select("m", "t"))
        return reduce(DataFrame.unionByName, outs).distinct(), empty.select("t")


# -- native semirings --------------------------------------------------------------------------
@dataclass(frozen=True)
class Native:
    """A semiring's column representation (module docstring table)."""

    name: str
    dtype: str

    def lit(self, value: Any) -> Column:
        if self.name == "LINEAGE":
            return F.lit(None).cast("array<string>") if value is None else F.array_sort(F.array(*[F.lit(x) for x in sorted(value)]).cast("array<string>"))
        return F.lit(value).cast(self.dtype)

    def plus(self, a: Column, b: Column) -> Column:
        if self.name in ("DERIVABILITY", "TRUST"):
            return a | b
        if self.name == "LINEAGE":
            return F.when(a.isNull(), b).when(b.isNull(), a).otherwise(F.array_sort(F.array_distinct(F.concat(a, b))))
        return F.least(a, b)

    def sum_agg(self, c: Column) -> Column:
        if self.name in ("DERIVABILITY", "TRUST"):
            return F.bool_or(c)
        if self.name == "LINEAGE":
            return F.when(F.count(c) > 0, F.array_sort(F.array_distinct(F.flatten(F.collect_list(c)))))
        return F.min(c)

    def product_agg(self, c: Column) -> Column:
        if self.name in ("DERIVABILITY", "TRUST"):
            return F.bool_and(c)
        if self.name == "WEIGHT":
            return F.sum(c)
        if self.name == "CONFIDENTIALITY":
            return F.max(c)
        return F.when(F.count(F.when(c.isNull(), 1)) > 0, F.lit(None).cast("array<string>")).otherwise(
            F.array_sort(F.array_distinct(F.flatten(F.collect_list(c))))
        )

    def to_python(self, value: Any) -> Any:
        if self.name == "LINEAGE":
            return None if value is None else frozenset(value)
        if self.name == "WEIGHT":
            return int(value) if value != math.inf and float(value).is_integer() else value
        return value


def native(s: Semiring) -> Native | None:
    dtype = {"DERIVABILITY": "boolean", "TRUST": "boolean", "WEIGHT": "double", "CONFIDENTIALITY": "int", "LINEAGE": "array<string>"}
    return Native(s.name, dtype[s.name]) if s.name in dtype else None


def _mapping_column(a: ast.Assignment | None, s: Semiring, nat: Native, name: Column, z: Column) -> Column:
    """The mapping functions of ``ASSIGNING EACH mapping`` as a ``when`` chain."""
    if a is None:
        return z

    def cond(c: ast.Condition) -> Column:
        if isinstance(c, (ast.And, ast.Or)):
            cols = [cond(p) for p in c.parts]
            return reduce((lambda x, y: x & y) if isinstance(c, ast.And) else (lambda x, y: x | y), cols)
        if isinstance(c, ast.Not):
            return ~cond(c.part)
        assert isinstance(c, ast.Comparison)
        for x, y in ((c.left, c.right), (c.right, c.left)):
            if isinstance(x, ast.VarRef) and isinstance(y, ast.Literal):
                if x.var == a.var:
                    same = name == str(y.value)
                elif x.var == a.arg:
                    same = z.eqNullSafe(nat.lit(s.literal(y.value, y.bare, y.loc)))
                else:
                    continue
                return same if c.op == "=" else ~same
        raise ProqlError("a mapping CASE compares $p with a mapping name or $z with a value", c.loc)

    out = None
    for case in reversed(a.cases):
        if isinstance(case.value, ast.VarRef):
            value = z
        elif isinstance(case.value, ast.Scale):  # WEIGHT (the only native numeric one): inf * k stays inf
            value = F.when(z == F.lit(float("inf")), z).otherwise(z * F.lit(float(case.value.factor)))
        else:
            value = nat.lit(s.literal(case.value.value, case.value.bare, case.value.loc))
        if case.condition is None:
            out = value
        else:
            out = F.when(cond(case.condition), value).otherwise(out if out is not None else z)
    return out if out is not None else z


# -- the query ---------------------------------------------------------------------------------
@dataclass
class SparkResult:
    """The Spark engine's answer, as DataFrames (the Python API; :meth:`collect` turns it into
    the local engine's :class:`~.evaluate.QueryResult` shape for printing).

    ``bindings``: one column ``_v(var)`` per RETURN variable (node texts). ``values``: ``(node, value)`` for
    every returned node, ``value`` in the semiring's column representation (native semirings)
    or its text (COUNT, POLYNOMIAL, PROBABILITY, computed on the driver). ``gout(m, t)`` and
    ``ginputs(m, u)``: the edges of G′; ``gnodes(node)``: its nodes."""

    columns: list[str]
    bindings: DataFrame
    values: DataFrame
    gout: DataFrame
    ginputs: DataFrame
    gnodes: DataFrame
    semiring: Semiring
    evaluated: bool
    stats: Stats
    epoch: int
    driver_values: dict[str, Any] | None = None
    probabilities: dict[str, float] | None = None
    asrs_used: list[str] = field(default_factory=list)

    @property
    def table(self) -> DataFrame:
        """The bindings with each returned node's value: columns ``x``, ``value_x``, ... (for
        ``$x`` and ``$X`` both returned, read the rows by name: Spark's default resolution of a
        column name ignores case)."""
        out = self.bindings
        for c in map(_v, self.columns):
            out = out.join(self.values.select(F.col("node").alias(c), F.col("value").alias(f"value_{c}")), c, "left")
        return out.select(*[F.col(_v(c)).alias(c) for c in self.columns], *[F.col(f"value_{_v(c)}").alias(f"value_{c}") for c in self.columns])

    def collect(self, graph: bool = True) -> "CollectedResult":
        """Bring the result to the driver (G′ only when ``graph``: the table format only counts it)."""
        rows = sorted((tuple(r[_v(c)] for c in self.columns) for r in self.bindings.collect()))
        kinds: dict[str, bool] = {}
        sub = Subgraph()
        if graph:
            for r in self.gout.collect():
                kinds[r.m] = True
                sub.outputs.add((_node(r.m, True), _node(r.t, False)))
            for r in self.ginputs.collect():
                kinds[r.m] = True
                sub.inputs.add((_node(r.u, False), _node(r.m, True)))
            sub.nodes = {_node(r.node, r.node in kinds) for r in self.gnodes.collect()}
            n_nodes = len(sub.nodes)
        else:
            n_nodes = self.gnodes.count()
        if self.driver_values is not None:
            vals = dict(self.driver_values)
        else:
            nat = native(self.semiring)
            vals = {r.node: nat.to_python(r.value) for r in self.values.collect()}
        nodes = [tuple(_node(x, False) for x in row) for row in rows]
        values = {_node(k, False): v for k, v in vals.items()}
        probs = None
        if self.probabilities is not None:
            probs = {_node(k, False): v for k, v in self.probabilities.items()}
        return CollectedResult(self.columns, nodes, values, sub, self.semiring, self.evaluated, probs, self.epoch, n_nodes, self.stats)


class SparkTupleNode(TupleNode):
    """A tuple node known by its display text (what the Spark engine computes with)."""

    def __str__(self) -> str:
        return self.values[0]


class SparkMappingNode(MappingNode):
    def __str__(self) -> str:
        return self.values[0]


def _node(text: str, mapping: bool):
    name = text.split("(", 1)[0]
    return SparkMappingNode(name, (text,)) if mapping else SparkTupleNode(name, (text,))


@dataclass
class CollectedResult:
    """A :class:`SparkResult` on the driver, with the fields the CLI printers read."""

    columns: list[str]
    rows: list[tuple]
    values: dict
    graph: Subgraph
    semiring: Semiring
    evaluated: bool
    probabilities: dict | None
    epoch: int
    node_count: int
    stats: Stats

    def value(self, node) -> str:
        return self.semiring.format(self.values[node])


def run_spark_query(
    q: ast.Query, g: SparkGraph, s: Semiring, probabilities: dict[str, float] | None = None, annotate_values: bool = True
) -> SparkResult:
    """Project and annotate on Spark (checked already by :func:`~.check.check_query`);
    ``annotate_values=False`` stops after the projection (``values`` then has no rows)."""
    stats = Stats()
    p = q.projection
    mapvars = {st.name for path in p.for_paths for st in path.steps if st.kind == "mapvar"}
    mt = SparkMatcher(g, mapvars, stats)
    v = g.spark.range(1).select()
    for path in p.for_paths:
        v = mt.match(path, v)
    stats.plan.append(f"FOR: {len(p.for_paths)} path(s) as joins over deriv/inputs of epoch {g.epoch}")
    if p.where is not None:
        v, col = mt.condition(p.where, v, [0])
        v = v.filter(col).select(*[c for c in v.columns if c.startswith("v_")])
        stats.plan.append("WHERE: native column filter")
    v = cut(v.distinct(), eager=True)
    gouts, starts = [], []
    for path in p.include:
        o, st = mt.include(path, v)
        gouts.append(o)
        starts.append(st)
    spark = g.spark
    gout = cut(reduce(DataFrame.unionByName, gouts, spark.createDataFrame([], "m string, t string")).distinct(), eager=True)
    ginputs = gout.select("m").distinct().join(g.inputs, "m")
    gatoms = gout.select("m").distinct().join(g.input_atoms, "m").select("m", "u")  # with multiplicity
    bindings = v.select(*[F.col(_v(r.var)) for r in p.returns]).distinct()  # columns _v(var)
    roots = reduce(DataFrame.unionByName, [bindings.select(F.col(_v(r.var)).alias("node")) for r in p.returns]).distinct()
    gnodes = reduce(
        DataFrame.unionByName,
        [gout.select(F.col("m").alias("node")), gout.select(F.col("t").alias("node")), ginputs.select(F.col("u").alias("node")), roots]
        + [st.select(F.col("t").alias("node")) for st in starts],
    ).distinct()
    gnodes = cut(gnodes, eager=True)
    tnodes = gnodes.join(gout.select(F.col("m").alias("node")).distinct(), "node", "left_anti").withColumnRenamed("node", "t")
    tnodes = tnodes.join(g.local_ids.select(F.col("id").alias("t"), F.lit(True).alias("local")), "t", "left")
    derived = gout.select("t").distinct().withColumn("_derived", F.lit(True))
    leaves = tnodes.join(derived, "t", "left").filter(F.coalesce(F.col("local"), F.lit(False)) | F.col("_derived").isNull()).select("t")
    leafcase = _leaf_cases(q.leaf, s, mt, leaves)
    result = SparkResult([r.var for r in p.returns], bindings, None, gout, ginputs, gnodes, s, q.evaluate, stats, g.epoch)  # type: ignore[arg-type]
    nat = native(s)
    if not annotate_values:
        result.values = spark.createDataFrame([], "node string, value string")
        result.driver_values = {}
        return result
    if nat is not None:
        vals = _fixpoint_native(q, s, nat, tnodes.select("t"), leafcase, gout, gatoms, stats)
        result.values = roots.join(vals.withColumnRenamed("t", "node"), "node", "left").select(
            "node", F.coalesce(F.col("value"), nat.lit(s.zero)).alias("value")
        )
        stats.plan.append(f"annotation: {s.name} fixpoint on Spark (min/max/union aggregates)")
        return result
    n = gnodes.count()
    if n > MAX_DRIVER_NODES:
        raise SelpError(
            f"{s.name} is evaluated on the driver and the projected graph has {n} nodes (limit {MAX_DRIVER_NODES});"
            f" narrow the query or use {', '.join(NATIVE)}, which run on Spark"
        )
    stats.plan.append(f"annotation: {s.name} on the driver over G′ ({n} nodes collected)")
    values = _driver_values(q, s, leafcase, gout, gatoms, roots, tnodes)
    result.driver_values = values
    if s.name == "PROBABILITY" and probabilities is not None:
        result.probabilities = {k: probability(x, probabilities) for k, x in values.items()}
    result.values = spark.createDataFrame([(k, s.format(x)) for k, x in values.items()], "node string, value string")
    return result


def _leaf_cases(a: ast.Assignment | None, s: Semiring, mt: SparkMatcher, leaves: DataFrame) -> DataFrame:
    """``(t, case, call)``: per leaf, the index of the first matching CASE (-1: none, the
    semiring's default), and the value of a SET edit_distance(...) when that case has one."""
    if a is None:
        return leaves.withColumn("case", F.lit(-1)).withColumn("call", F.lit(None).cast("double"))
    v = leaves.withColumn(_v(a.var), F.col("t"))
    idx: Column = F.lit(-1)
    call: Column = F.lit(None).cast("double")
    conds = []
    for i, case in enumerate(a.cases):
        if case.condition is None:
            conds.append(F.lit(True))
        else:
            v, col = mt.condition(case.condition, v, [100 + 10 * i])
            conds.append(col)
    for i in range(len(a.cases) - 1, -1, -1):
        idx = F.when(conds[i], F.lit(i)).otherwise(idx)
        case = a.cases[i]
        if isinstance(case.value, ast.Call):
            v, col = _call(case.value, v, mt)
            call = F.when(conds[i], col).otherwise(call)
    return v.select("t", idx.alias("case"), call.alias("call"))


def _call(c: ast.Call, v: DataFrame, mt: SparkMatcher) -> tuple[DataFrame, Column]:
    """``edit_distance(a, b)`` on the values' text, natively (``levenshtein``)."""
    args = []
    for x in c.args:
        if isinstance(x, ast.AttrRef):
            v, enc, _ = mt._attr(v, x)
            args.append(F.coalesce(F.regexp_replace(enc, "^" + SKOLEM_MARK, ""), F.lit("")))
        elif isinstance(x, ast.Literal):
            args.append(F.lit(str(x.value)))
        else:
            raise ProqlError("edit_distance takes attributes and literals", c.loc)
    return v, F.levenshtein(args[0], args[1]).cast("double")


def _leaf_value_column(a: ast.Assignment | None, s: Semiring, nat: Native) -> Column:
    out = nat.lit(s.one) if s.name != "LINEAGE" else F.array(F.col("t"))
    for i, case in enumerate(a.cases if a is not None else ()):
        if isinstance(case.value, ast.Call):
            val = F.col("call").cast(nat.dtype)
        else:
            val = nat.lit(s.literal(case.value.value, case.value.bare, case.value.loc))
        out = F.when(F.col("case") == i, val).otherwise(out)
    return out


def _fixpoint_native(q, s, nat: Native, tnodes, leafcase, gout, gatoms, stats: Stats) -> DataFrame:
    """Kleene iteration on DataFrames from 0 (module docstring); returns ``(t, value)``."""
    base = tnodes.join(leafcase.withColumn("_leaf", F.lit(True)), "t", "left")
    base = base.select("t", F.when(F.col("_leaf").isNotNull(), _leaf_value_column(q.leaf, s, nat)).otherwise(nat.lit(s.zero)).alias("leaf"))
    base = cut(base, eager=True)
    mnames = gatoms.select("m").distinct().withColumn("_name", F.substring_index(F.col("m"), "(", 1))
    gin = cut(gatoms.select("m", "u"), eager=True)
    gout = cut(gout.select("m", "t"), eager=True)
    val = base.select("t", F.col("leaf").alias("value"))
    rounds = 0
    while True:
        rounds += 1
        z = gin.join(val.withColumnRenamed("t", "u"), "u").groupBy("m").agg(nat.product_agg(F.col("value")).alias("z"))
        mv = z.join(mnames, "m").select("m", _mapping_column(q.mapping, s, nat, F.col("_name"), F.col("z")).alias("mv"))
        tv = gout.join(mv, "m").groupBy("t").agg(nat.sum_agg(F.col("mv")).alias("dv"))
        new = base.join(tv, "t", "left").select(
            "t", F.when(F.col("dv").isNull(), F.col("leaf")).otherwise(nat.plus(F.col("leaf"), F.col("dv"))).alias("value")
        )
        new = cut(new, eager=True)
        changed = new.join(val.withColumnRenamed("value", "old"), "t").filter(~F.col("value").eqNullSafe(F.col("old")))
        done = changed.isEmpty()
        if rounds > 1:
            release(val)  # the previous round's values (round 1 reads base, which stays)
        if done:
            break
        if rounds > MAX_ROUNDS:
            raise SelpError(f"{s.name}: no fixpoint after {rounds} rounds")
        val = new
    stats.rounds.append((f"{s.name} fixpoint", rounds))
    return new


def _driver_values(q, s, leafcase, gout, gatoms, roots, tnodes) -> dict[str, Any]:
    """COUNT/POLYNOMIAL/PROBABILITY: the local fixpoint over G′ collected from Spark."""
    sub = Subgraph()
    inputs: dict[MappingNode, list[TupleNode]] = {}
    for r in gatoms.collect():  # one row per body atom: a tuple read twice counts twice
        m, u = _node(r.m, True), _node(r.u, False)
        sub.inputs.add((u, m))
        sub.nodes.update((u, m))
        inputs.setdefault(m, []).append(u)
    for r in gout.collect():
        m, t = _node(r.m, True), _node(r.t, False)
        sub.outputs.add((m, t))
        sub.nodes.update((m, t))
    cases = {r.t: (r.case, r.call) for r in leafcase.collect()}
    local = {_node(r.t, False) for r in tnodes.filter(F.col("local")).collect()}

    class _G:  # what annotate reads of a graph
        pass

    g = _G()
    g.inputs = {m: tuple(us) for m, us in inputs.items()}  # type: ignore[attr-defined]
    g.local = local  # type: ignore[attr-defined]
    cases_list = q.leaf.cases if q.leaf is not None else ()

    def leaf(t) -> Any:
        i, call = cases.get(str(t), (-1, None))
        if i < 0:
            return s.leaf_default(str(t))
        case = cases_list[i]
        if isinstance(case.value, ast.Call):
            return s.literal(int(call), False, case.value.loc)
        return s.literal(case.value.value, case.value.bare, case.value.loc)

    rootnodes = [_node(r.node, False) for r in roots.collect()]
    for t in rootnodes:
        sub.nodes.add(t)
    vals = annotate(rootnodes, sub, s, leaf, mapping_function(q.mapping, s), g)  # type: ignore[arg-type]
    return {str(t): vals[t] for t in rootnodes}
