"""Dictionary codes for the global rounds of a recursive component on Spark.

A component whose rules only join and copy values -- atoms, constants, equality and inequality
of plain values; no arithmetic, order comparison, Skolem term or aggregate -- never looks inside a
value: two values are equal exactly when their encodings are (the uniform encoding is canonical,
:mod:`selp.values`). Its rounds can therefore run on a dictionary code per value instead of the
value's text: every distinct value of the relations the component reads (and of the rules'
constants) gets a ``bigint``, the inputs are encoded once, the rounds join, deduplicate and
anti-join longs, and the component's relations are decoded once at the end. On a nonlinear
closure this is the difference between hashing tens of millions of rows of strings a round and
hashing longs (datasets/results/spark-nonlinear).

The codes are dense (``0 .. n-1``), so a row of ``a`` codes packs into one ``bigint`` when
``a * bits(n) <= 63``: the round's deduplication and its anti-join with the relation then hash
one long per row (Spark's specialised long-keyed hash tables) rather than a row of columns.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from selp.engines.spark_compile import empty_frame, rel_columns, union_all
from selp.engines.spark_frames import materialize_count
from selp.language.ast import Atom, Comparison, Const, Rule, Var
from selp.language.validate import Component
from selp.values import Value, encode

# "false" runs global rounds on the values' text, as before the codes (for comparison and as an
# escape hatch); anything else lets an eligible component run on codes
CODES_CONF = "spark.selp.rounds.codes"
PACKED = "_k"  # the one column of a packed row


def uncodable(comp: Component, types: dict[str, tuple[str, ...]]) -> str | None:
    """Why ``comp``'s rounds cannot run on dictionary codes (None when they can): a rule that
    computes with values rather than copying and comparing them for equality."""
    for rule in comp.rules:
        why = _uncodable_rule(rule, types)
        if why:
            return f"rule {rule.name} {why}"
    return None


def _uncodable_rule(rule: Rule, types: dict[str, tuple[str, ...]]) -> str | None:
    if rule.aggregate is not None:
        return "aggregates"
    if any(not isinstance(t, (Var, Const)) for t in rule.head.args):
        return "builds a value in its head"
    vtype: dict[Var, str] = {}
    for b in rule.body:
        if isinstance(b, Atom):
            if any(not isinstance(t, (Var, Const)) for t in b.args):
                return "has a computed atom argument"
            if not b.negated:
                for t, typ in zip(b.args, types[b.relation]):
                    if isinstance(t, Var):
                        vtype.setdefault(t, typ)
    for b in rule.body:
        if not isinstance(b, Comparison):
            continue
        if b.op not in ("=", "!=") or not all(isinstance(t, (Var, Const)) for t in (b.left, b.right)):
            return f"compares with {b.op}" if b.op not in ("=", "!=") else "compares computed values"
        kinds = {_kind(t, vtype) for t in (b.left, b.right)}
        if kinds == {"int", "float"}:
            return "compares an int with a float (numerically)"
    return None


def _kind(t: Var | Const, vtype: dict[Var, str]) -> str | None:
    if isinstance(t, Var):
        return vtype.get(t)
    v = t.value
    return "float" if isinstance(v, float) else "int" if isinstance(v, int) else "str"


def rule_constants(comp: Component) -> list[str]:
    """The encoded constants of ``comp``'s rules (they need codes even when no input holds them)."""
    out: dict[str, None] = {}
    for rule in comp.rules:
        terms = list(rule.head.args)
        for b in rule.body:
            terms.extend(b.args if isinstance(b, Atom) else (b.left, b.right))  # type: ignore[union-attr]
        for t in terms:
            if isinstance(t, Const):
                out[encode(t.value)] = None
    return list(out)


class Codes:
    """A dictionary from encoded values to dense codes, materialised in Spark, and the frame
    transformations that use it. The rules' constants hold codes ``0 .. m-1`` (known on the
    driver: a constant is a literal, no lookup job); the other values ``m .. n-1``."""

    def __init__(self, table: DataFrame, size: int, constants: dict[str, int], broadcast_rows: int) -> None:
        self.table = table  # columns v (encoded value), code (bigint)
        self.size = size
        self.constants = constants
        self.broadcast_rows = broadcast_rows
        self.bits = max(1, (size - 1).bit_length())

    @classmethod
    def build(cls, spark: SparkSession, inputs: list[tuple[DataFrame, int]], constants: list[str], broadcast_rows: int) -> "Codes":
        """The dictionary of every value of the ``(frame, arity)`` inputs and of ``constants``
        (one job: a distinct of the inputs' columns, numbered in one partition)."""
        const_codes = {c: i for i, c in enumerate(constants)}
        fixed = spark.createDataFrame([(c, i) for c, i in const_codes.items()], "v string, code bigint")
        columns = [df.select(F.col(c).alias("v")) for df, arity in inputs for c in rel_columns(arity)[:arity]]
        parts = [fixed]
        if columns:
            values = union_all(columns).distinct()
            if constants:
                values = values.filter(~F.col("v").isin(constants))
            # one partition numbers the values 0 .. n-1 (the id of partition 0 is its row index)
            numbered = values.coalesce(1).select("v", (F.monotonically_increasing_id() + len(constants)).alias("code"))
            parts.append(numbered)
        table, size = materialize_count(union_all(parts))
        return cls(table, size, const_codes, broadcast_rows)

    def literal(self, value: Value) -> Column:
        """A rule constant's code."""
        return F.lit(self.constants[encode(value)]).cast("bigint")

    def encode(self, df: DataFrame, arity: int) -> DataFrame:
        """A relation frame of text values as codes (nullary frames are unchanged)."""
        return self._map(df, arity, "v", "code")

    def decode(self, df: DataFrame, arity: int) -> DataFrame:
        """A coded relation frame back in the uniform string encoding."""
        return self._map(df, arity, "code", "v")

    def _map(self, df: DataFrame, arity: int, key: str, out: str) -> DataFrame:
        cols = rel_columns(arity)
        if not arity:
            return df
        for c in cols:
            table = self.table.select(F.col(key).alias(c), F.col(out).alias("_to"))
            if self.size <= self.broadcast_rows:
                table = F.broadcast(table)
            df = df.join(table, on=c).drop(c).withColumnRenamed("_to", c)
        return df.select(*cols)

    def empty(self, spark: SparkSession, arity: int) -> DataFrame:
        """An empty coded relation frame."""
        if not arity:
            return empty_frame(spark, 0)
        return spark.createDataFrame([], StructType([StructField(c, LongType(), False) for c in rel_columns(arity)]))

    def packs(self, arity: int) -> bool:
        """Whether a row of ``arity`` codes packs into one bigint (and is worth packing)."""
        return arity >= 2 and arity * self.bits <= 63

    def pack(self, df: DataFrame, arity: int) -> DataFrame:
        """The rows of a coded frame as one bigint column :data:`PACKED`."""
        key = reduce(lambda a, b: a.bitwiseOR(b), [F.shiftleft(F.col(c), self.bits * i) for i, c in enumerate(rel_columns(arity))])
        return df.select(key.alias(PACKED))

    def unpack(self, df: DataFrame, arity: int) -> DataFrame:
        """The inverse of :meth:`pack`."""
        mask = (1 << self.bits) - 1
        k = F.col(PACKED)
        return df.select(*[(F.shiftright(k, self.bits * i).bitwiseAND(F.lit(mask))).alias(c) for i, c in enumerate(rel_columns(arity))])

