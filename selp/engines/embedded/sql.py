"""Rules compiled to DuckDB SQL over the column kinds of :mod:`selp.engines.embedded.physical`.

A relation of arity ``n`` is a table with columns ``c0..c{n-1}`` (a nullary relation has the one
column ``_unit``, a row meaning true). :func:`compile_body` turns a rule into the pieces of a
``SELECT``: the body's positive atoms as aliased tables in ``FROM``, joins, constants, repeated
variables, comparisons and negations (``NOT EXISTS``, which DuckDB plans as an anti-join) in
``WHERE``, and the head's columns as expressions -- Skolem terms included -- so nothing runs in
Python per row. The semantics are those of :func:`selp.engines.joins.compare`: labeled nulls are
equal only to themselves and never ordered; an integer and a string are never equal or ordered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from selp import arith
from selp.engines.embedded.physical import Kind
from selp.engines.joins import compare
from selp.errors import Location
from selp.language.ast import Aggregate, Arith, Atom, Comparison, Const, Rule, SkolemTerm, Term, Var
from selp.values import INT64_MAX, INT64_MIN, Skolem, Value, format_value

UNIT = "_unit"
MARK = "chr(0)"  # SQL for selp.values.SKOLEM_MARK


def ident(name: str) -> str:
    """A quoted SQL identifier (relation names may hold ``@``, ``!`` and other characters)."""
    return '"' + name.replace('"', '""') + '"'


def columns(arity: int) -> list[str]:
    """The column names of a relation table."""
    return [f"c{i}" for i in range(arity)] if arity else [UNIT]


def sql_string(s: str) -> str:
    """A SQL string literal (the Skolem mark, NUL, cannot appear inside a literal)."""
    if "\x00" in s:
        parts = s.split("\x00")
        return "(" + f" || {MARK} || ".join(sql_string(p) for p in parts) + ")"
    return "'" + s.replace("'", "''") + "'"


def literal(v: Value, kind: Kind) -> str | None:
    """The SQL literal of ``v`` in a column of ``kind``; None when ``v`` can never be stored
    there (a string in an integer column or the reverse: such a condition is false)."""
    if isinstance(v, Skolem):
        return f"({MARK} || {sql_string(format_value(v))})" if kind.sql == "VARCHAR" else None
    if isinstance(v, int) and not isinstance(v, bool):
        if kind.logical != "int":
            return None
        return f"CAST({v} AS BIGINT)" if kind.native_int else sql_string(str(v))
    if isinstance(v, float):
        if kind.logical != "float":
            return None
        return f"CAST({format_value(v)} AS DOUBLE)" if kind.native_number else sql_string(format_value(v))
    if kind.logical != "str":
        return None
    return sql_string(v)


def const_filter(col: str, v: Value, kind: Kind) -> str:
    """The SQL condition that column ``col`` (of ``kind``) holds constant ``v``."""
    lit = literal(v, kind)
    return "FALSE" if lit is None else f"({col} = {lit})"


@dataclass(frozen=True)
class Expr:
    """A SQL expression and the kind of the value it yields."""

    sql: str
    kind: Kind


def as_encoded(e: Expr) -> str:
    """The value in the uniform encoding (what ``VARCHAR`` columns hold; a ``DOUBLE`` cast to text
    is the canonical float text of :func:`selp.values.format_float`)."""
    return f"CAST({e.sql} AS VARCHAR)" if e.kind.native_number else e.sql


def skolem_arg_text(e: Expr) -> str:
    """The canonical text of a value inside a Skolem term (``format_value``)."""
    if e.kind.native_number:
        return f"CAST({e.sql} AS VARCHAR)"
    if e.kind.logical != "str":
        plain = e.sql
    else:
        plain = f"('\"' || replace(replace({e.sql}, '\\', '\\\\'), '\"', '\\\"') || '\"')"
    if not e.kind.tainted:
        return plain
    return f"(CASE WHEN starts_with({e.sql}, {MARK}) THEN substr({e.sql}, 2) ELSE {plain} END)"


def convert(e: Expr, kind: Kind) -> str:
    """``e`` stored in a column of ``kind`` (only native int -> encoded text ever converts)."""
    if e.kind.sql == kind.sql:
        return e.sql
    if kind.sql == "VARCHAR":
        return as_encoded(e)
    raise AssertionError(f"cannot store a {e.kind} value in a {kind} column")


def _orderable(e: Expr) -> str:
    """The value for ``<``: NULL (so the comparison is false) for a labeled null."""
    if e.kind.native_number:
        return e.sql
    if e.kind.logical != "str":
        return f"TRY_CAST({e.sql} AS {e.kind.number_sql})"
    if e.kind.tainted:
        return f"(CASE WHEN starts_with({e.sql}, {MARK}) THEN NULL ELSE {e.sql} END)"
    return e.sql


def number(e: Expr) -> str:
    """A numeric value as ``BIGINT`` or ``DOUBLE`` (NULL for a labeled null)."""
    return _orderable(e)


def _is_null_label(e: Expr) -> str:
    return f"starts_with({e.sql}, {MARK})" if e.kind.tainted else "FALSE"


def comparison(op: str, a: Expr, b: Expr) -> str:
    """``a op b`` with selp's semantics (a SQL NULL result counts as false in WHERE)."""
    if a.kind.logical != b.kind.logical and "str" not in (a.kind.logical, b.kind.logical):
        # an int and a float: compared as floats (selp.arith.numeric_pair); a labeled null is
        # unequal to any number and unordered
        x, y = f"CAST({number(a)} AS DOUBLE)", f"CAST({number(b)} AS DOUBLE)"
        if op == "!=":
            return f"({_is_null_label(a)} OR {_is_null_label(b)} OR {x} <> {y})"
        return f"({x} {op} {y})"
    if a.kind.logical != b.kind.logical:
        # an int and a string are never equal -- unless both are the same labeled null
        same_null = f"({as_encoded(a)} = {as_encoded(b)} AND starts_with({as_encoded(a)}, {MARK}))"
        if op == "=":
            return same_null
        if op == "!=":
            return f"NOT {same_null}"
        return "FALSE"
    if op in ("=", "!="):
        sql_op = "=" if op == "=" else "<>"
        if a.kind.sql == b.kind.sql:
            return f"({a.sql} {sql_op} {b.sql})"
        return f"({as_encoded(a)} {sql_op} {as_encoded(b)})"
    return f"({_orderable(a)} {op} {_orderable(b)})"


@dataclass
class Body:
    """The pieces of a rule's ``SELECT``: ``FROM`` items, ``WHERE`` conditions, head columns and
    the alias of every positive body atom (by body index)."""

    froms: list[str]
    where: list[str]
    head: list[str]  # one expression per head column (``_unit`` for a nullary head)
    alias: dict[int, str]
    nullary: bool = False

    def select(self, distinct: bool = True, extra: list[str] | None = None) -> str:
        """The ``SELECT`` of the head columns ``c0..`` (plus ``extra`` columns)."""
        named = [f"{h} AS {c}" for h, c in zip(self.head, columns(len(self.head)) if not self.nullary else [UNIT])]
        cols = ", ".join(named + (extra or []))
        sql = f"SELECT {'DISTINCT ' if distinct else ''}{cols}"
        if self.froms:
            sql += " FROM " + ", ".join(self.froms)
        if self.where:
            sql += " WHERE " + " AND ".join(self.where)
        return sql


def compile_body(
    rule: Rule,
    kinds: Mapping[str, tuple[Kind, ...]],
    table: Callable[[int, str], str],
) -> Body:
    """Compile ``rule``; ``table(body index, relation)`` names the table each positive atom
    reads (full, delta or a CTE); negated atoms read ``table(-1, relation)``."""
    froms: list[str] = []
    where: list[str] = []
    alias: dict[int, str] = {}
    home: dict[Var, Expr] = {}
    for i, b in enumerate(rule.body):
        if not isinstance(b, Atom) or b.negated:
            continue
        a = f"a{i}"
        alias[i] = a
        froms.append(f"{table(i, b.relation)} AS {a}")
        ks = kinds[b.relation]
        for p, t in enumerate(b.args):
            col = Expr(f"{a}.c{p}", ks[p])
            if isinstance(t, Const):
                where.append(const_filter(col.sql, t.value, ks[p]))
            elif isinstance(t, Var):
                if t.anonymous:
                    continue
                if t in home:
                    where.append(comparison("=", home[t], col))
                else:
                    home[t] = col

    def term(t: Term, loc: Location) -> Expr | Value:
        if isinstance(t, Var):
            return home[t]
        if isinstance(t, Arith):
            return arith_sql(t, lambda x: _operand(term(x, loc)), rule.name, loc)
        assert isinstance(t, Const)
        return t.value

    # assignments bind their variable to the expression's SQL (an expression over a labeled null
    # has no value: the row is dropped)
    assigned = {}
    for i, v, e in rule.assignments():
        assigned[i] = v
        value = term(e, rule.body[i].loc)
        home[v] = value if isinstance(value, Expr) else _operand(value)
        if isinstance(e, Arith):
            where.append(f"({home[v].sql} IS NOT NULL)")
    for i, b in enumerate(rule.body):
        if isinstance(b, Comparison) and i not in assigned:
            left, right = term(b.left, b.loc), term(b.right, b.loc)
            if not isinstance(left, Expr) and not isinstance(right, Expr):
                where.append("TRUE" if compare(b.op, left, right) else "FALSE")
                continue
            if not isinstance(left, Expr):
                left = _const_expr(left, right.kind)  # type: ignore[union-attr]
            if not isinstance(right, Expr):
                right = _const_expr(right, left.kind)
            where.append(comparison(b.op, left, right))
    for p, t in enumerate(rule.head.args):
        if isinstance(t, Arith):
            home[Var(f"#head{p}")] = e = term(t, rule.head.loc)  # type: ignore[assignment]
            where.append(f"({e.sql} IS NOT NULL)")  # type: ignore[union-attr]
        elif isinstance(t, Aggregate):  # the instance's value; without one it still counts
            home[Var(f"#head{p}")] = _operand(term(t.arg, rule.head.loc))
    for b in rule.body:
        if isinstance(b, Atom) and b.negated:
            ks = kinds[b.relation]
            conds = []
            local = rule.negation_locals(b)
            first: dict[Var, Expr] = {}  # a variable local to the negation: where it first is
            for p, t in enumerate(b.args):
                col = Expr(f"n.c{p}", ks[p])
                if isinstance(t, Var):
                    if t.anonymous:
                        continue
                    if t in local:
                        if t in first:
                            conds.append(comparison("=", first[t], col))
                        else:
                            first[t] = col
                        continue
                    conds.append(comparison("=", home[t], col))
                else:
                    assert isinstance(t, Const)
                    lit = literal(t.value, ks[p])
                    conds.append("FALSE" if lit is None else f"({col.sql} = {lit})")
            sub = f"SELECT 1 FROM {table(-1, b.relation)} AS n"
            if conds:
                sub += " WHERE " + " AND ".join(conds)
            where.append(f"NOT EXISTS ({sub})")
    head_kinds = kinds[rule.head.relation]
    head: list[str] = []
    if not rule.head.args:
        head.append("TRUE")
    for p, t in enumerate(rule.head.args):
        if isinstance(t, Aggregate):  # count needs no value, only the instance
            head.append("CAST(1 AS BIGINT)" if t.fn == "count" else aggregated_value(home[Var(f"#head{p}")], head_kinds[p]))
            continue
        if isinstance(t, Arith):
            t = Var(f"#head{p}")  # computed above
        # a fixed SQL type per column, so the UNION of rules and a CTE's two halves agree
        head.append(f"CAST({head_value(t, head_kinds[p], home)} AS {head_kinds[p].sql})")
    return Body(froms, where, head, alias, nullary=not rule.head.args)


def aggregated_value(e: Expr, kind: Kind) -> str:
    """An instance's aggregated value as a plain ``BIGINT``, ``DOUBLE`` or ``VARCHAR`` of the
    head column's logical type (NULL for a labeled null: min, max and sum ignore it); the
    aggregate is stored as ``kind`` afterwards."""
    sql = {"int": "BIGINT", "float": "DOUBLE", "str": "VARCHAR"}[kind.logical]
    return f"CAST({_orderable(e)} AS {sql})"


def _operand(v: Expr | Value) -> Expr:
    """An arithmetic operand: a column, an expression or a constant as a number."""
    if isinstance(v, Expr):
        return v
    if isinstance(v, float):
        return Expr(f"CAST({format_value(v)} AS DOUBLE)", Kind("float", False))
    return Expr(f"CAST({v} AS BIGINT)", Kind("int", False))


def arith_sql(t: Arith, operand: Callable[[Term], Expr], rule: str, loc: Location) -> Expr:
    """``t`` as SQL over its operands' expressions, through the checked macros of
    :data:`ARITH_MACROS` (NULL when an operand is a labeled null)."""
    args = [operand(a) for a in t.args]
    typ = "float" if any(a.kind.logical == "float" for a in args) else "int"
    nums = ", ".join(number(a) for a in args)
    name = ("neg" if len(args) == 1 else _MACRO_NAMES[t.op]) + ("_f" if typ == "float" else "_i")
    return Expr(f"selp_{name}({nums}, {sql_string(arith.site(rule, loc))})", Kind(typ, False))


_MACRO_NAMES = {"+": "add", "-": "sub", "*": "mul", "/": "div"}


def _macros() -> list[str]:
    err = "error(w || '{what}|' || CAST(x AS VARCHAR) || ' {op} ' || CAST(y AS VARCHAR))"
    out = []
    nulls = "WHEN x IS NULL OR y IS NULL THEN NULL "  # a labeled null operand: no value
    for op, name in _MACRO_NAMES.items():
        h = f"(CAST(x AS HUGEINT) {'//' if op == '/' else op} CAST(y AS HUGEINT))"
        zero = f"WHEN y = 0 THEN {err.format(what='division by zero', op=op)} " if op == "/" else ""
        out.append(
            f"CREATE OR REPLACE MACRO selp_{name}_i(x, y, w) AS CASE {nulls}{zero}"
            f"WHEN {h} BETWEEN {INT64_MIN} AND {INT64_MAX} THEN CAST({h} AS BIGINT)"
            f" ELSE {err.format(what='integer overflow', op=op)} END"
        )
        r = f"(CAST(x AS DOUBLE) {op} CAST(y AS DOUBLE))"
        zero = f"WHEN CAST(y AS DOUBLE) = 0 THEN {err.format(what='division by zero', op=op)} " if op == "/" else ""
        out.append(
            f"CREATE OR REPLACE MACRO selp_{name}_f(x, y, w) AS CASE {nulls}{zero}"
            f"WHEN isfinite({r}) THEN {r} + CAST(0.0 AS DOUBLE)"  # -0.0 is 0.0
            f" ELSE {err.format(what='float overflow', op=op)} END"
        )
    out.append(
        f"CREATE OR REPLACE MACRO selp_neg_i(x, w) AS CASE WHEN x = {INT64_MIN}"
        f" THEN error(w || 'integer overflow|-(' || CAST(x AS VARCHAR) || ')') ELSE -x END"
    )
    out.append("CREATE OR REPLACE MACRO selp_neg_f(x, w) AS (-x) + CAST(0.0 AS DOUBLE)")
    # sums (selp.aggregate.fold): an int sum in 64 bits, a float sum of the ascending values
    out.append(
        f"CREATE OR REPLACE MACRO selp_sum_i(s, w) AS CASE WHEN s IS NULL THEN NULL WHEN s BETWEEN {INT64_MIN} AND {INT64_MAX}"
        " THEN CAST(s AS BIGINT) ELSE error(w) END"
    )
    out.append(
        "CREATE OR REPLACE MACRO selp_sum_f(xs, w) AS CASE WHEN xs IS NULL OR len(xs) = 0 THEN NULL"
        " WHEN isfinite(list_reduce(xs, lambda a, b: a + b))"
        " THEN list_reduce(xs, lambda a, b: a + b) + CAST(0.0 AS DOUBLE) ELSE error(w) END"
    )
    return out


# checked arithmetic (selp.arith) as DuckDB macros: created on every connection (store.connect)
ARITH_MACROS = _macros()


def _const_expr(v: Value, kind: Kind) -> Expr:
    """A constant compared with a column: stored like the column when it fits, else as itself
    (the comparison then sees two logical types and is false, or true for ``!=``)."""
    lit = literal(v, kind)
    if lit is not None:
        return Expr(lit, kind)
    if isinstance(v, (int, float)):
        return _operand(v)
    return Expr(sql_string(v), Kind("str", False))  # type: ignore[arg-type]


def head_value(t: Term, kind: Kind, home: Mapping[Var, Expr]) -> str:
    """A head argument as SQL, stored as ``kind``."""
    if isinstance(t, Var):
        return convert(home[t], kind)
    if isinstance(t, Const):
        lit = literal(t.value, kind)
        assert lit is not None, f"constant {t.value!r} does not fit a {kind} column"
        return lit
    assert isinstance(t, SkolemTerm)
    return f"({MARK} || {skolem_text(t, home)})"


def skolem_text(t: SkolemTerm, home: Mapping[Var, Expr]) -> str:
    """The canonical text of a Skolem term's value, without the mark."""
    parts = [sql_string(t.fn + "(")]
    for n, a in enumerate(t.args):
        if n:
            parts.append("','")
        if isinstance(a, Var):
            parts.append(skolem_arg_text(home[a]))
        elif isinstance(a, Const):
            parts.append(sql_string(format_value(a.value)))
        else:
            assert isinstance(a, SkolemTerm)
            parts.append(skolem_text(a, home))
    parts.append("')'")
    return "(" + " || ".join(parts) + ")"
