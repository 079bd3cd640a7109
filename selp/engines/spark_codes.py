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
from selp.engines.spark_frames import materialize, materialize_count, release
from selp.errors import SelpError
from selp.language.ast import Atom, Comparison, Const, Rule, Var
from selp.language.validate import Component
from selp.values import Value, encode

# auto (the default) | true | false: whether an eligible component's global rounds run on codes.
# "false" runs them on the values' text, as before the codes (for comparison and as an escape
# hatch); "auto" only when the component's inputs hold at least AUTO_MIN_ROWS rows
CODES_CONF = "spark.selp.rounds.codes"
CODES_MODES = ("auto", "true", "false")
# Under this many input rows the codes do not pay: their broadcast joins that encode the inputs
# and decode the result are a few jobs, and a small component's rounds have few join rows to
# speed up (the N/4 graph of datasets/results/spark-nonlinear: 255 edges, 6,888 paths, ran slower
# on codes). The N = 340 graph (1,020 edges, 105,301 paths) gains about 2x from them.
AUTO_MIN_ROWS = 1_000
PACKED = "_k"  # the one column of a packed row


def codes_mode(value: str) -> str:
    """The ``spark.selp.rounds.codes`` setting checked: ``auto``, ``true`` or ``false``."""
    mode = value.strip().lower()
    if mode not in CODES_MODES:
        raise SelpError(f"{CODES_CONF}={value!r}: expected auto, true or false")
    return mode


def use_codes(mode: str, input_rows: int | None) -> str | None:
    """Why an eligible component's rounds do not run on codes under ``mode`` (None when they
    do); ``input_rows`` is what its input relations hold (None: unknown, counts as large)."""
    if mode == "false":
        return f"{CODES_CONF}=false"
    if mode == "auto" and input_rows is not None and input_rows < AUTO_MIN_ROWS:
        return f"its inputs hold {input_rows} rows, under {AUTO_MIN_ROWS} ({CODES_CONF}=auto)"
    return None


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

    def __init__(self, table: DataFrame, size: int, constants: dict[str, int], broadcast_rows: int, exact: bool = True) -> None:
        self.table = table  # columns v (encoded value), code (bigint)
        self.size = size  # the number of codes, or (not exact) an upper bound on it
        self.exact = exact
        self.constants = constants
        self.broadcast_rows = broadcast_rows
        self.bits = max(1, (size - 1).bit_length())

    @classmethod
    def build(cls, spark: SparkSession, inputs: list[tuple[DataFrame, int]], constants: list[str], broadcast_rows: int,
              rows: int | None = None, arities: tuple[int, ...] = ()) -> "Codes":
        """The dictionary of every value of the ``(frame, arity)`` inputs and of ``constants``
        (a distinct of the inputs' columns, numbered in one partition).

        With ``rows`` (the inputs' row count, known from loading) the dictionary gets no job of
        its own: ``len(constants) + rows * arity`` bounds its size, the first round's job
        computes it (and keeps it), and the bound gives the packing's bits -- unless with the
        bound a row of some arity in ``arities`` (the component's relations) would not pack:
        then one job counts the values, as without ``rows``, since the exact size may pack it."""
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
        whole = union_all(parts)
        if rows is not None:
            bound = len(constants) + sum(rows * arity for _, arity in inputs)
            loose = cls(materialize(whole), bound, const_codes, broadcast_rows, exact=False)
            if all(loose.packs(a) for a in arities if a >= 2):
                return loose
            release(loose.table)
        table, size = materialize_count(whole)
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

