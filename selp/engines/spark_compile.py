"""Rules compiled into Spark DataFrame plans over the uniform string encoding.

A relation of arity ``n`` is a DataFrame of ``n`` string columns ``c0..c{n-1}`` (see
:mod:`selp.values` for the encoding); a nullary relation has the single column ``_unit`` holding
``""`` (one row = true). :func:`compile_rule` turns one rule, optionally driven by one delta atom
(a semi-naive variant), into a plan whose columns are the head relation's columns: positive atoms
become filtered, renamed frames joined on shared variables; comparisons and negations are applied
as soon as their variables are bound; the head is built with native column expressions, Skolem
terms included, so no Python runs per row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import reduce
from typing import Callable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from selp.engines.joins import compare
from selp.language.ast import Atom, Comparison, Const, Rule, SkolemTerm, Term, Var
from selp.values import SKOLEM_MARK, encode, format_value

UNIT = "_unit"  # the one column of a nullary relation's frame
_INT_MAX = 2**31 - 1


def rel_columns(arity: int) -> list[str]:
    """Column names of a relation frame: ``c0..c{n-1}``, or ``[_unit]`` when nullary."""
    return [f"c{i}" for i in range(arity)] if arity else [UNIT]


def rel_schema(arity: int) -> StructType:
    """The all-string schema of a relation frame."""
    return StructType([StructField(c, StringType(), False) for c in rel_columns(arity)])


def empty_frame(spark: SparkSession, arity: int) -> DataFrame:
    """An empty relation frame."""
    return spark.createDataFrame([], rel_schema(arity))


def union_all(frames: list[DataFrame]) -> DataFrame:
    """Union of frames with identical column names."""
    return reduce(lambda a, b: a.unionByName(b), frames)


def is_skolem(c: Column) -> Column:
    """Whether an encoded value is a labeled null."""
    return c.startswith(SKOLEM_MARK)


def skolem_body(c: Column) -> Column:
    """The canonical text of an encoded labeled null (the encoding without its mark)."""
    return F.substring(c, 2, _INT_MAX)


def display_column(c: Column) -> Column:
    """:func:`selp.values.display_value` of an encoded value: Skolem text loses its mark."""
    return F.when(is_skolem(c), skolem_body(c)).otherwise(c)


def int_value(c: Column) -> Column:
    """An encoded int column as bigint (null for labeled nulls; try_cast because of ANSI mode)."""
    return F.when(is_skolem(c), F.lit(None)).otherwise(c.try_cast("bigint"))


@dataclass
class Sources:
    """Where a compiled rule reads relations from, and what it knows about their sizes."""

    frame: Callable[[str, str], DataFrame]  # (relation, "full" | "delta") -> frame
    size: Callable[[str, str], int | None]  # exact or estimated rows, None if unknown
    types: dict[str, tuple[str, ...]]
    broadcast_rows: int  # hint a broadcast join for inputs at most this large


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


class _RuleCompiler:
    def __init__(self, rule: Rule, delta_atom: int | None, src: Sources) -> None:
        self.rule = rule
        self.delta_atom = delta_atom
        self.src = src
        self.col: dict[Var, str] = {}  # variable -> its column in the join result
        self.vtype: dict[Var, str] = {}
        for b in rule.body:
            if isinstance(b, Atom) and not b.negated:
                for p, t in enumerate(b.args):
                    if isinstance(t, Var) and not t.anonymous and t not in self.col:
                        # index prefix keeps names unique; variable names may hold '@' or '!'
                        self.col[t] = f"v{len(self.col)}_{_safe(t.name)}"
                        self.vtype[t] = src.types[b.relation][p]

    # -- atoms -------------------------------------------------------------------------------
    def _atom(self, atom: Atom, source: str) -> DataFrame:
        """The atom's matches with one column per (named) variable: constants and repeated
        variables become filters on the relation frame."""
        df = self.src.frame(atom.relation, source)
        conds: list[Column] = []
        first: dict[Var, int] = {}
        for p, t in enumerate(atom.args):
            c = F.col(f"c{p}")
            if isinstance(t, Const):
                conds.append(c == F.lit(encode(t.value)))
            elif isinstance(t, Var) and not t.anonymous:
                if t in first:
                    conds.append(c == F.col(f"c{first[t]}"))
                else:
                    first[t] = p
        if conds:
            df = df.filter(reduce(lambda a, b: a & b, conds))
        return df.select(*[F.col(f"c{p}").alias(self.col[v]) for v, p in first.items()])

    def _maybe_broadcast(self, df: DataFrame, relation: str, source: str) -> DataFrame:
        n = self.src.size(relation, source)
        if n is not None and n <= self.src.broadcast_rows:
            return F.broadcast(df)
        return df

    # -- comparisons -------------------------------------------------------------------------
    def _operand(self, t: Term) -> tuple[Column, bool]:
        """(encoded value, is a variable)."""
        if isinstance(t, Const):
            return F.lit(encode(t.value)), False
        assert isinstance(t, Var)
        return F.col(self.col[t]), True

    def _comparison(self, c: Comparison) -> Column:
        """Same semantics as :func:`selp.engines.joins.compare` on encoded values: equality is
        structural (encodings are canonical), an order comparison with a labeled null is false,
        int columns compare numerically and str columns by code point (UTF-8 byte order)."""
        (lv, lvar), (rv, rvar) = self._operand(c.left), self._operand(c.right)
        if c.op == "=":
            return lv == rv
        if c.op == "!=":
            return lv != rv
        var = c.left if lvar else c.right
        typ = self.vtype[var]  # type: ignore[index]
        if typ == "int":
            lk = int_value(lv) if lvar else F.lit(c.left.value).cast("bigint")  # type: ignore[union-attr]
            rk = int_value(rv) if rvar else F.lit(c.right.value).cast("bigint")  # type: ignore[union-attr]
        else:
            lk, rk = lv, rv
        ops = {"<": Column.__lt__, "<=": Column.__le__, ">": Column.__gt__, ">=": Column.__ge__}
        cond = ops[c.op](lk, rk)
        guards = [~is_skolem(v) for v, isvar in ((lv, lvar), (rv, rvar)) if isvar]
        # guard explicitly rather than relying on null propagation from the cast
        return reduce(lambda a, b: a & b, guards, cond)

    # -- negation ----------------------------------------------------------------------------
    def _negation(self, df: DataFrame, atom: Atom) -> DataFrame:
        local = self.rule.negation_locals(atom)
        for v in atom.vars():
            if v in local and not v.anonymous:
                self.col.setdefault(v, f"l{len(self.col)}_{_safe(v.name)}")
        # the atom's matches (repeated local variables filtered) projected on the shared columns
        right = self._atom(atom, "full")
        keys = [self.col[v] for v in dict.fromkeys(v for v in atom.vars() if not v.anonymous and v not in local)]
        right = right.select(*keys)
        right = self._maybe_broadcast(right, atom.relation, "full")
        if not keys:
            # no shared variable: every left row survives iff no fact matches at all
            return df.join(right.limit(1), how="left_anti")
        return df.join(right, on=keys, how="left_anti")

    # -- head --------------------------------------------------------------------------------
    def _skolem_text(self, t: SkolemTerm) -> Column:
        parts: list[Column] = [F.lit(t.fn + "(")]
        for i, a in enumerate(t.args):
            if i:
                parts.append(F.lit(","))
            parts.append(self._arg_text(a))
        parts.append(F.lit(")"))
        return F.concat(*parts)

    def _arg_text(self, a: Term) -> Column:
        """A Skolem argument's piece of the canonical text (see selp.values.format_value)."""
        if isinstance(a, Const):
            return F.lit(format_value(a.value))
        if isinstance(a, SkolemTerm):
            return self._skolem_text(a)  # nested labeled nulls are written bare
        c = F.col(self.col[a])
        if self.vtype[a] == "int":
            plain = c  # canonical decimal text already
        else:
            escaped = F.replace(F.replace(c, F.lit("\\"), F.lit("\\\\")), F.lit('"'), F.lit('\\"'))
            plain = F.concat(F.lit('"'), escaped, F.lit('"'))
        return F.when(is_skolem(c), skolem_body(c)).otherwise(plain)

    def _head_value(self, t: Term) -> Column:
        if isinstance(t, Const):
            return F.lit(encode(t.value))
        if isinstance(t, Var):
            return F.col(self.col[t])
        return F.concat(F.lit(SKOLEM_MARK), self._skolem_text(t))

    # -- the whole rule ----------------------------------------------------------------------
    def compile(self, spark: SparkSession) -> DataFrame | None:
        rule = self.rule
        pending_cmp: list[Comparison] = []
        for c in rule.comparisons:
            if isinstance(c.left, Const) and isinstance(c.right, Const):
                if not compare(c.op, c.left.value, c.right.value):
                    return None  # the body can never hold
            else:
                pending_cmp.append(c)
        positives = [i for i, b in enumerate(rule.body) if isinstance(b, Atom) and not b.negated]
        for i in positives:
            a: Atom = rule.body[i]  # type: ignore[assignment]
            if self.src.size(a.relation, "delta" if i == self.delta_atom else "full") == 0:
                return None  # joining with an empty relation: skip without a Spark job
        with_vars = [i for i in positives if any(not v.anonymous for v in rule.body[i].vars())]  # type: ignore[union-attr]
        ground = [i for i in positives if i not in with_vars]
        pending_neg = list(rule.negative_atoms)

        def source(i: int) -> str:
            return "delta" if i == self.delta_atom else "full"

        def size(i: int) -> float:
            n = self.src.size(rule.body[i].relation, source(i))  # type: ignore[union-attr]
            return float("inf") if n is None else n

        # join order: the delta atom first (it is the small side), then greedily the atom sharing
        # most variables with what is bound (avoids cross joins), smaller inputs first on ties
        remaining = list(with_vars)
        df: DataFrame | None = None
        bound: set[Var] = set()
        df_source: tuple[str, str] | None = None  # set while df is still a single atom
        while remaining:
            if df is None:
                first = self.delta_atom if self.delta_atom in remaining else min(remaining, key=lambda i: (size(i), i))
                pick = first
            else:
                pick = min(
                    remaining,
                    key=lambda i: (-len(set(rule.body[i].vars()) & bound), size(i), i),  # type: ignore[union-attr]
                )
            remaining.remove(pick)
            atom: Atom = rule.body[pick]  # type: ignore[assignment]
            frame = self._atom(atom, source(pick))
            if df is None:
                df, df_source = frame, (atom.relation, source(pick))
            else:
                shared = [self.col[v] for v in dict.fromkeys(atom.vars()) if not v.anonymous and v in bound]
                right_small = self.src.size(atom.relation, source(pick))
                left_small = self.src.size(*df_source) if df_source else None
                if right_small is not None and right_small <= self.src.broadcast_rows:
                    frame = F.broadcast(frame)
                elif left_small is not None and left_small <= self.src.broadcast_rows:
                    df = F.broadcast(df)
                df = df.join(frame, on=shared, how="inner") if shared else df.crossJoin(frame)
                df_source = None
            bound.update(v for v in atom.vars() if not v.anonymous)
            df = self._apply_ready(df, bound, pending_cmp, pending_neg)
        if df is None:
            # no atom binds a variable: start from a single empty tuple
            df = spark.range(1).select(F.lit("").alias(UNIT))
        for i in ground:
            # an atom without variables is a yes/no condition on the whole body
            a = rule.body[i]
            df = df.join(self._atom(a, source(i)).limit(1), how="left_semi")  # type: ignore[arg-type]
        df = self._apply_ready(df, bound, pending_cmp, pending_neg)
        assert not pending_cmp and not pending_neg, "validation guarantees every variable is bound"
        head = rule.head
        cols = rel_columns(head.arity)
        if head.arity == 0:
            return df.select(F.lit("").alias(UNIT))
        return df.select(*[self._head_value(t).alias(n) for t, n in zip(head.args, cols)])

    def _apply_ready(
        self, df: DataFrame, bound: set[Var], pending_cmp: list[Comparison], pending_neg: list[Atom]
    ) -> DataFrame:
        """Apply comparisons and negations whose variables are all bound (as early as possible)."""
        for c in list(pending_cmp):
            if all(v in bound for v in c.vars()):
                df = df.filter(self._comparison(c))
                pending_cmp.remove(c)
        for n in list(pending_neg):
            if all(v in bound or v in self.rule.negation_locals(n) for v in n.vars()):
                df = self._negation(df, n)
                pending_neg.remove(n)
        return df


def compile_rule(
    spark: SparkSession, rule: Rule, delta_atom: int | None, sources: Sources
) -> DataFrame | None:
    """A plan computing the head facts of ``rule`` (columns of :func:`rel_columns`).

    ``delta_atom`` is the body index of the atom that reads the ``"delta"`` source (a semi-naive
    variant); every other atom reads ``"full"``. Returns ``None`` when the rule provably derives
    nothing (a false constant comparison, or an empty input), so callers launch no job for it.
    """
    return _RuleCompiler(rule, delta_atom, sources).compile(spark)
