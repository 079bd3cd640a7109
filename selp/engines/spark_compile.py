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

from selp import arith
from selp.engines.joins import compare
from selp.errors import Location
from selp.language.ast import Aggregate, Arith, Atom, Comparison, Const, Rule, SkolemTerm, Term, Var, term_vars
from selp.values import INT64_MIN, SKOLEM_MARK, Value, encode, format_value

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


def number_value(c: Column, typ: str) -> Column:
    """An encoded int or float column as bigint or double (null for labeled nulls)."""
    return F.when(is_skolem(c), F.lit(None)).otherwise(c.try_cast("bigint" if typ == "int" else "double"))


def let(value: Column, body: Callable[[Column], Column]) -> Column:
    """``body(x)`` with ``x`` bound to ``value`` computed once: an expression that uses a value
    many times (:func:`float_text`, checked arithmetic) stays small however deep the nesting."""
    return F.transform(F.array(value), body).getItem(0)


def float_text(d: Column) -> Column:
    """The canonical text of a double (:func:`selp.values.format_float`, Python's shortest
    round-trip form: ``0.1``, ``1.0``, ``1e+20``, ``1.5e-05``) built from column expressions.

    The shortest digits are the fewest significant digits (Java's ``%.Ne``, 1 to 17) that read
    back as the same double, laid out the way Python does: fixed notation for exponents -4 to 15,
    else ``d.ddde+XX``. (Java rounds the digits of ``Double.toString``, not the exact value, so a
    17-digit case could in principle differ in its last digit; none is known.)"""

    def shortest(x: Column) -> Column:
        sci = F.when(F.format_string("%.0e", x).cast("double") == x, F.format_string("%.0e", x))
        for precision in range(1, 16):
            form = F.format_string(f"%.{precision}e", x)
            sci = sci.when(form.cast("double") == x, form)
        return sci.otherwise(F.format_string("%.16e", x))

    def parts(sci: Column) -> Column:
        pattern = r"^(-?)([0-9])\.?([0-9]*)e([+-][0-9]+)$"
        rest = F.regexp_replace(F.regexp_extract(sci, pattern, 3), "0+$", "")
        return F.struct(
            F.regexp_extract(sci, pattern, 1).alias("sign"),
            F.regexp_extract(sci, pattern, 2).alias("first"),
            rest.alias("rest"),
            F.regexp_extract(sci, pattern, 4).cast("int").alias("exp"),
        )

    def layout(p: Column) -> Column:
        first, rest, exp = p["first"], p["rest"], p["exp"]
        digits = F.concat(first, rest)
        fixed_pos = F.concat(
            F.rpad(digits, exp + 1, "0").substr(F.lit(1), exp + 1),
            F.lit("."),
            F.when(F.length(digits) > exp + 1, digits.substr(exp + 2, F.lit(400))).otherwise(F.lit("0")),
        )
        fixed_neg = F.concat(F.lit("0."), F.repeat(F.lit("0"), -exp - 1), digits)
        scientific = F.concat(
            first,
            F.when(F.length(rest) > 0, F.concat(F.lit("."), rest)).otherwise(F.lit("")),
            F.lit("e"),
            F.when(exp < 0, F.lit("-")).otherwise(F.lit("+")),
            F.when(F.abs(exp) < 10, F.lit("0")).otherwise(F.lit("")),
            F.abs(exp).cast("string"),
        )
        body = F.when((exp >= 0) & (exp < 16), fixed_pos).when((exp >= -4) & (exp < 0), fixed_neg).otherwise(scientific)
        return F.concat(p["sign"], body)

    return let(d + F.lit(0.0), lambda x: F.when(x.isNull(), F.lit(None)).otherwise(let(parts(shortest(x)), layout)))


@dataclass
class Sources:
    """Where a compiled rule reads relations from, and what it knows about their sizes."""

    frame: Callable[[str, str], DataFrame]  # (relation, "full" | "delta" | "old") -> frame
    size: Callable[[str, str], int | None]  # exact or estimated rows, None if unknown
    types: dict[str, tuple[str, ...]]
    broadcast_rows: int  # hint a broadcast join for inputs at most this large
    # a constant's column value: its encoding, unless the frames hold dictionary codes
    # (:mod:`selp.engines.spark_codes`), when this maps it to its code
    literal: Callable[[Value], Column] | None = None


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


class _RuleCompiler:
    def __init__(self, rule: Rule, delta_atom: int | None, src: Sources, old_after: bool = False) -> None:
        self.rule = rule
        self.delta_atom = delta_atom
        self.old_after = old_after
        self.src = src
        self.col: dict[Var, str] = {}  # variable -> its column in the join result
        self.vtype: dict[Var, str] = {}
        # an aggregate counts rule instances: '_' then is a variable like any other (a column)
        self.instances = rule.aggregate is not None
        for b in rule.body:
            if isinstance(b, Atom) and not b.negated:
                for p, t in enumerate(b.args):
                    if isinstance(t, Var) and self._named(t) and t not in self.col:
                        # index prefix keeps names unique; variable names may hold '@' or '!'
                        self.col[t] = f"v{len(self.col)}_{_safe(t.name)}"
                        self.vtype[t] = src.types[b.relation][p]

    def _named(self, v: Var) -> bool:
        """Whether ``v`` gets a column (every variable but ``_``, which too in aggregate rules)."""
        return not v.anonymous or self.instances

    def _lit(self, value: Value) -> Column:
        """A constant as the frames hold it (its encoding, or its dictionary code)."""
        return self.src.literal(value) if self.src.literal else F.lit(encode(value))

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
                conds.append(c == self._lit(t.value))
            elif isinstance(t, Var) and self._named(t):
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
            return self._lit(t.value), False
        assert isinstance(t, Var)
        return F.col(self.col[t]), True

    def _type(self, t: Term) -> str:
        if isinstance(t, Var):
            return self.vtype[t]
        if isinstance(t, Const):
            return "float" if isinstance(t.value, float) else "int" if isinstance(t.value, int) else "str"
        return "float" if any(self._type(a) == "float" for a in t.args) else "int"  # type: ignore[union-attr]

    def _num(self, t: Term, loc: Location) -> Column:
        """A numeric term as a bigint or double column (null for a labeled null)."""
        if isinstance(t, Var):
            return number_value(F.col(self.col[t]), self.vtype[t])
        if isinstance(t, Const):
            return F.lit(t.value).cast("double" if isinstance(t.value, float) else "bigint")
        assert isinstance(t, Arith)
        return self._arith(t, loc)

    def _arith(self, t: Arith, loc: Location) -> Column:
        """``t`` with the checks of :mod:`selp.arith`: an overflow or a division by zero raises
        (raise_error) a message :func:`selp.arith.located` relocates; null for a labeled null."""
        typ = self._type(t)
        operands = [self._num(a, loc) for a in t.args]
        if len(operands) == 1:
            return let(operands[0], lambda x: self._checked(t, typ, [x], loc))
        both = F.struct(operands[0].alias("x"), operands[1].alias("y"))
        return let(both, lambda v: self._checked(t, typ, [v["x"], v["y"]], loc))

    def _checked(self, t: Arith, typ: str, args: list[Column], loc: Location) -> Column:
        """The operation of ``t`` on operand values ``args`` (each computed once, see :func:`let`)."""
        site = arith.site(self.rule.name, loc)

        def text(x: Column, a: Term) -> Column:
            return float_text(x) if self._type(a) == "float" else x.cast("string")

        def fail(what: str) -> Column:
            shown = [text(x, a) for x, a in zip(args, t.args)]
            op = [F.lit("-("), shown[0], F.lit(")")] if len(args) == 1 else [shown[0], F.lit(f" {t.op} "), shown[1]]
            return F.raise_error(F.concat(F.lit(f"{site}{what}|"), *op))

        nulls = reduce(lambda a, b: a | b, [x.isNull() for x in args])
        out = F.when(nulls, F.lit(None))
        if len(args) == 1:
            (x,) = args
            if typ == "float":
                return out.otherwise(-x + F.lit(0.0))
            return out.when(x == F.lit(INT64_MIN), fail("integer overflow")).otherwise(-x)
        x, y = args
        if typ == "float":
            x, y = x.cast("double"), y.cast("double")
            if t.op == "/":
                out = out.when(y == 0.0, fail("division by zero"))
            r = {"+": x + y, "-": x - y, "*": x * y, "/": x / y}[t.op]
            bad = F.isnan(r) | (F.abs(r) == F.lit(float("inf")))
            return out.when(bad, fail("float overflow")).otherwise(r + F.lit(0.0))
        if t.op == "/":
            out = out.when(y == 0, fail("division by zero"))
            out = out.when((x == F.lit(INT64_MIN)) & (y == -1), fail("integer overflow"))
            # truncating toward zero, exactly: x - x % y is a multiple of y (% truncates in Java)
            dec = "decimal(20,0)"
            q = ((x - x % y).cast(dec) / y.cast(dec)).cast("bigint")
            return out.otherwise(q)
        r = {"+": F.try_add, "-": F.try_subtract, "*": F.try_multiply}[t.op](x, y)
        return out.when(r.isNull(), fail("integer overflow")).otherwise(r)

    def _encoded(self, t: Term, loc: Location) -> Column:
        """A numeric term's value in the uniform encoding (canonical int or float text)."""
        x = self._num(t, loc)
        return float_text(x) if self._type(t) == "float" else x.cast("string")

    def _numeric_comparison(self, c: Comparison) -> Column:
        """A comparison with arithmetic, or of an int with a float (as floats): a labeled null is
        unequal to every number and unordered; an expression without a value compares false."""
        mixed = self._type(c.left) != self._type(c.right)
        a, b = self._num(c.left, c.loc), self._num(c.right, c.loc)
        if mixed:
            a, b = a.cast("double"), b.cast("double")
        ops = {"=": Column.__eq__, "!=": Column.__ne__, "<": Column.__lt__, "<=": Column.__le__, ">": Column.__gt__, ">=": Column.__ge__}
        cond = ops[c.op](a, b)
        if c.op == "!=":
            labels = [is_skolem(F.col(self.col[t])) for t in (c.left, c.right) if isinstance(t, Var)]
            return reduce(lambda x, y: x | y, labels, F.coalesce(cond, F.lit(False)))
        return F.coalesce(cond, F.lit(False))

    def _comparison(self, c: Comparison) -> Column:
        """Same semantics as :func:`selp.engines.joins.compare` on encoded values: equality is
        structural (encodings are canonical), an order comparison with a labeled null is false,
        numbers compare numerically and str columns by code point (UTF-8 byte order)."""
        if isinstance(c.left, Arith) or isinstance(c.right, Arith) or (
            {self._type(c.left), self._type(c.right)} == {"int", "float"}
        ):
            return self._numeric_comparison(c)
        (lv, lvar), (rv, rvar) = self._operand(c.left), self._operand(c.right)
        if c.op == "=":
            return lv == rv
        if c.op == "!=":
            return lv != rv
        var = c.left if lvar else c.right
        typ = self.vtype[var]  # type: ignore[index]
        if typ in ("int", "float"):
            cast = "bigint" if typ == "int" else "double"
            lk = number_value(lv, typ) if lvar else F.lit(c.left.value).cast(cast)  # type: ignore[union-attr]
            rk = number_value(rv, typ) if rvar else F.lit(c.right.value).cast(cast)  # type: ignore[union-attr]
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
            if v in local and self._named(v):
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
        if self.vtype[a] != "str":
            plain = c  # canonical number text already
        else:
            escaped = F.replace(F.replace(c, F.lit("\\"), F.lit("\\\\")), F.lit('"'), F.lit('\\"'))
            plain = F.concat(F.lit('"'), escaped, F.lit('"'))
        return F.when(is_skolem(c), skolem_body(c)).otherwise(plain)

    def _head_value(self, t: Term) -> Column:
        if isinstance(t, Const):
            return self._lit(t.value)
        if isinstance(t, Var):
            return F.col(self.col[t])
        return F.concat(F.lit(SKOLEM_MARK), self._skolem_text(t))

    # -- the whole rule ----------------------------------------------------------------------
    def compile(self, spark: SparkSession) -> DataFrame | None:
        rule = self.rule
        pending_cmp: list[Comparison] = []
        assigned = {i for i, _, _ in rule.assignments()}
        self.pending_assign = [(v, e, rule.body[i].loc) for i, v, e in rule.assignments()]
        for i, c in enumerate(rule.body):
            if not isinstance(c, Comparison) or i in assigned:
                continue
            if isinstance(c.left, Const) and isinstance(c.right, Const):
                if not compare(c.op, c.left.value, c.right.value):
                    return None  # the body can never hold
            else:
                pending_cmp.append(c)
        positives = [i for i, b in enumerate(rule.body) if isinstance(b, Atom) and not b.negated]
        def source(i: int) -> str:
            if i == self.delta_atom:
                return "delta"
            if self.old_after and self.delta_atom is not None and i > self.delta_atom:
                return "old"
            return "full"

        for i in positives:
            a: Atom = rule.body[i]  # type: ignore[assignment]
            if self.src.size(a.relation, source(i)) == 0:
                return None  # joining with an empty relation: skip without a Spark job
        with_vars = [i for i in positives if any(self._named(v) for v in rule.body[i].vars())]  # type: ignore[union-attr]
        ground = [i for i in positives if i not in with_vars]
        pending_neg = list(rule.negative_atoms)

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
                shared = [self.col[v] for v in dict.fromkeys(atom.vars()) if self._named(v) and v in bound]
                right_small = self.src.size(atom.relation, source(pick))
                left_small = self.src.size(*df_source) if df_source else None
                if right_small is not None and right_small <= self.src.broadcast_rows:
                    frame = F.broadcast(frame)
                elif left_small is not None and left_small <= self.src.broadcast_rows:
                    df = F.broadcast(df)
                df = df.join(frame, on=shared, how="inner") if shared else df.crossJoin(frame)
                df_source = None
            bound.update(v for v in atom.vars() if self._named(v))
            df = self._apply_ready(df, bound, pending_cmp, pending_neg)
        if df is None:
            # no atom binds a variable: start from a single empty tuple
            df = spark.range(1).select(F.lit("").alias(UNIT))
        for i in ground:
            # an atom without variables is a yes/no condition on the whole body
            a = rule.body[i]
            df = df.join(self._atom(a, source(i)).limit(1), how="left_semi")  # type: ignore[arg-type]
        df = self._apply_ready(df, bound, pending_cmp, pending_neg)
        assert not pending_cmp and not pending_neg and not self.pending_assign, "validation binds every variable"
        head = rule.head
        cols = rel_columns(head.arity)
        if head.arity == 0:
            return df.select(F.lit("").alias(UNIT))
        values = []
        for p, t in enumerate(head.args):
            if isinstance(t, Aggregate):
                # the instance's value (null without one: count still counts the instance)
                a = t.arg
                values.append(F.lit("1") if t.fn == "count" else F.col(self.col[a]) if isinstance(a, Var) else self._encoded(a, head.loc))
            elif isinstance(t, Arith):
                # computed once, and a row whose expression has no value derives nothing
                df = df.withColumn(f"_head{p}", self._encoded(t, head.loc))
                df = df.filter(F.col(f"_head{p}").isNotNull())
                values.append(F.col(f"_head{p}"))
            else:
                values.append(self._head_value(t))
        return df.select(*[v.alias(n) for v, n in zip(values, cols)])

    def _apply_ready(
        self, df: DataFrame, bound: set[Var], pending_cmp: list[Comparison], pending_neg: list[Atom]
    ) -> DataFrame:
        """Apply assignments, comparisons and negations whose variables are all bound (as early
        as possible)."""
        progress = True
        while progress:
            progress = False
            for v, e, loc in list(self.pending_assign):
                if all(x in bound for x in term_vars(e)):
                    self.col[v] = f"a{len(self.col)}_{_safe(v.name)}"
                    if isinstance(e, Var):
                        self.vtype[v] = self.vtype[e]
                        df = df.withColumn(self.col[v], F.col(self.col[e]))
                    elif isinstance(e, Const):
                        self.vtype[v] = self._type(e)
                        df = df.withColumn(self.col[v], self._lit(e.value))
                    else:
                        self.vtype[v] = self._type(e)
                        df = df.withColumn(self.col[v], self._encoded(e, loc)).filter(F.col(self.col[v]).isNotNull())
                    bound.add(v)
                    self.pending_assign.remove((v, e, loc))
                    progress = True
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
    spark: SparkSession, rule: Rule, delta_atom: int | None, sources: Sources, old_after: bool = False
) -> DataFrame | None:
    """A plan computing the head facts of ``rule`` (columns of :func:`rel_columns`).

    ``delta_atom`` is the body index of the atom that reads the ``"delta"`` source (a semi-naive
    variant); every other atom reads ``"full"`` -- or, with ``old_after``, the positive atoms
    after the delta atom read ``"old"`` (the relation without the last delta), so that the
    variants of a rule with several recursive atoms form each combination of delta facts once.
    Returns ``None`` when the rule provably derives nothing (a false constant comparison, or an
    empty input), so callers launch no job for it.
    """
    return _RuleCompiler(rule, delta_atom, sources, old_after).compile(spark)
