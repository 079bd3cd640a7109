"""Column types: declared, or inferred from the program's constants, arithmetic and the data.

The rule, also stated in docs/language.md:

* A column declared with ``.decl R(a: int, b: str, c: float)`` has that type.
* Otherwise columns that the program connects (a variable shared between positions, a variable
  passed from body to head, ``x = y``) form one group and get one type:

  - ``str`` when something in the group is a string: a string constant, or a data cell that is
    not a number; also when there is no evidence at all;
  - else ``float`` when a float constant or a float-valued expression is stored in the group, or
    when the data holds decimals (``1.5``) and the program uses the group as a number (a
    constant, an arithmetic operand, an expression's value) -- decimals alone stay ``str``, as
    they always were;
  - else ``int`` when an integer is stored there or the data holds integers;
  - else, for a group that is only compared with constants or used in arithmetic, ``float`` when
    it is compared with a float constant (``x < 1.5``), ``int`` otherwise.

* An expression's type follows from its operands: ``int`` op ``int`` is ``int`` (``/`` truncates,
  see :mod:`selp.arith`), anything with a ``float`` is ``float``; a string operand is an error.
  An assigned variable (``c = x + 1``) and a head position holding an expression get the
  expression's type, and their group must have exactly that type: values are never widened when
  stored, so an ``int`` expression or constant stored in a ``float`` column is an error (write
  ``1.0``); compared with a ``float``, an ``int`` is converted.
* Integers are canonicalised (``007`` and ``7`` are the same value); in a ``str`` group they stay
  text. A string constant in an ``int`` group, or an integer constant in a group that the data
  makes ``str``, is an error, as is a non-integer cell in an ``int`` column or a non-number in a
  ``float`` one.
* Skolem values (labeled nulls) fit a column of any type.
"""

from __future__ import annotations

from dataclasses import dataclass

from selp.errors import DataError, Location, ProgramError, echo
from selp.language.ast import Aggregate, Arith, Atom, Comparison, Const, Rule, Term, Var, term_vars
from selp.language.validate import Analysis

Column = tuple[str, int]


@dataclass(frozen=True)
class DataEvidence:
    """What a data file column says about its type."""

    all_int: bool
    example: str | None = None  # a non-integer cell, for messages
    where: Location | None = None  # where that cell is
    # every cell a finite decimal number (``1.5``, ``7``, ``-2e3``); None: the same as all_int
    all_number: bool | None = None
    non_number: str | None = None  # a cell that is not a number, for messages

    @property
    def numbers(self) -> bool:
        return self.all_int if self.all_number is None else self.all_number


class UnionFind:
    """Disjoint sets of columns (union by the smaller name, path halving)."""

    def __init__(self) -> None:
        self.parent: dict[Column, Column] = {}

    def find(self, x: Column) -> Column:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: Column, b: Column) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


# A node of the type graph: a column (relation, position), or a rule's variable (rule, -1 - k)
Node = tuple[str, int]


@dataclass
class _Expr:
    """An arithmetic expression whose value is stored: at a head position or in an assigned
    variable (``target``); its type follows from its operands'."""

    target: Node
    term: Term
    loc: Location
    rule: str


class TypeGraph:
    """The groups of columns (and rule variables) the program connects, in ``uf``, and the evidence
    it gives about their types (see :func:`resolve_types`); the embedded engine's column kinds
    use the same groups."""

    def __init__(self, analysis: Analysis) -> None:
        self.uf = UnionFind()
        for rel, n in analysis.arities.items():
            for i in range(n):
                self.uf.find((rel, i))
        # (node, type, location, description, stored): a constant in the program; a stored one
        # (an atom argument, a fact's value, an assigned constant) must have the column's type
        self.consts: list[tuple[Node, str, Location, str, bool]] = []
        self.exprs: list[_Expr] = []
        # (node, location, what): must be a number (an operand, or compared with arithmetic)
        self.operands: list[tuple[Node, Location, str]] = []
        self.var_nodes: dict[tuple[str, Var], Node] = {}
        self.first_column: dict[Node, Column] = {}  # a variable's first column, for messages
        for r in analysis.program.rules:
            self.rule(r)
        for f in analysis.program.facts:
            for i, t in enumerate(f.atom.args):
                assert isinstance(t, Const)
                self.consts.append(((f.atom.relation, i), _type_of(t.value), f.loc, f"value {_show(t.value)}", True))

    def var(self, r: Rule, v: Var) -> Node:
        key = (r.name, v)
        if key not in self.var_nodes:
            self.var_nodes[key] = ("\x00" + r.name, -1 - len(self.var_nodes))
            self.uf.find(self.var_nodes[key])
        return self.var_nodes[key]

    def rule(self, r: Rule) -> None:
        for a in [r.head] + [b for b in r.body if isinstance(b, Atom)]:
            for i, t in enumerate(a.args):
                col = (a.relation, i)
                if isinstance(t, Var) and not t.anonymous:
                    self.uf.union(self.var(r, t), col)
                    self.first_column.setdefault(self.var(r, t), col)
                elif isinstance(t, Const):
                    self.consts.append((col, _type_of(t.value), a.loc, f"constant {_show(t.value)}", True))
                elif isinstance(t, Arith):  # only in heads (validation)
                    self.arith(r, t, a.loc)
                    self.exprs.append(_Expr(col, t, a.loc, r.name))
                elif isinstance(t, Aggregate):
                    self.aggregate(r, t, col, a.loc)
        assigned = {i: (v, e) for i, v, e in r.assignments()}
        for i, c in enumerate(r.body):
            if not isinstance(c, Comparison):
                continue
            if i in assigned:
                v, e = assigned[i]
                if isinstance(e, Var):
                    self.uf.union(self.var(r, v), self.var(r, e))
                elif isinstance(e, Const):
                    self.consts.append((self.var(r, v), _type_of(e.value), c.loc, f"constant {_show(e.value)}", True))
                else:
                    self.arith(r, e, c.loc)
                    self.exprs.append(_Expr(self.var(r, v), e, c.loc, r.name))
                continue
            self.filter(r, c)

    def aggregate(self, r: Rule, t: Aggregate, col: Node, loc: Location) -> None:
        """``count`` stores an int; ``min``/``max``/``sum`` store their argument's type (a
        ``sum`` needs a number; ``min``/``max`` also order strings)."""
        if t.fn == "count":
            self.consts.append((col, "int", loc, f"count({_term_text(t.arg)})", True))
            for v in term_vars(t.arg):
                self.var(r, v)
            return
        a = t.arg
        if isinstance(a, Var):
            self.uf.union(self.var(r, a), col)
            self.first_column.setdefault(self.var(r, a), col)
            if t.fn == "sum":
                self.operands.append((self.var(r, a), loc, f"{a.name}, summed by sum(...),"))
        else:
            self.arith(r, a, loc)
            self.exprs.append(_Expr(col, a, loc, r.name))

    def filter(self, r: Rule, c: Comparison) -> None:
        lv, rv = c.left, c.right
        if isinstance(lv, Var) and isinstance(rv, Var):
            self.uf.union(self.var(r, lv), self.var(r, rv))
            return
        if isinstance(lv, Const) and isinstance(rv, Const):
            kinds = {_type_of(lv.value), _type_of(rv.value)}
            if "str" in kinds and len(kinds) == 2:
                number = "an integer" if "int" in kinds else "a float"
                raise ProgramError(f"comparison {_show(lv.value)} {c.op} {_show(rv.value)} mixes a string and {number}", c.loc)
            return
        for v, o in ((lv, rv), (rv, lv)):
            if isinstance(v, Var) and isinstance(o, Const):
                t = _type_of(o.value)
                # an int compared with a float column is compared as a float: no evidence of int
                self.consts.append((self.var(r, v), t, c.loc, f"constant {_show(o.value)}", False))
        numeric_side = any(isinstance(t, Arith) for t in (lv, rv))
        for t in (lv, rv):
            if isinstance(t, Arith):
                self.arith(r, t, c.loc)
            elif numeric_side and isinstance(t, Var):
                self.operands.append((self.var(r, t), c.loc, f"{t.name}, compared with arithmetic,"))
            elif numeric_side and isinstance(t, Const) and isinstance(t.value, str):
                raise ProgramError(f"comparison of arithmetic with the string {_show(t.value)}", c.loc)

    def arith(self, r: Rule, t: Term, loc: Location) -> None:
        """Operands of ``t`` must be numbers."""
        if isinstance(t, Var):
            self.operands.append((self.var(r, t), loc, f"variable {t.name}"))
        elif isinstance(t, Const):
            if isinstance(t.value, str):
                raise ProgramError(f"string {_show(t.value)} in arithmetic (in rule {r.name})", loc)
        elif isinstance(t, Arith):
            for a in t.args:
                self.arith(r, a, loc)


def _expr_type(t: Term, var_type, rule: str) -> str:
    """``int``, ``float`` or ``str`` (a string operand: an error reported elsewhere)."""
    if isinstance(t, Var):
        return var_type(rule, t)
    if isinstance(t, Const):
        return _type_of(t.value)
    assert isinstance(t, Arith)
    kinds = {_expr_type(a, var_type, rule) for a in t.args}
    if "str" in kinds:
        return "str"
    return "float" if "float" in kinds else "int"


def resolve_types(
    analysis: Analysis, data: dict[Column, DataEvidence] | None = None
) -> dict[str, tuple[str, ...]]:
    """Assign ``"str"``/``"int"``/``"float"`` to every column of every relation (see the module
    docstring)."""
    program = analysis.program
    data = data or {}
    g = TypeGraph(analysis)
    uf = g.uf

    declared: dict[Column, tuple[str, Location, str]] = {}
    for d in program.decls:
        for i, (cname, ctype) in enumerate(d.columns):
            declared[(d.relation, i)] = (ctype, d.loc, f"{d.relation}.{cname}")

    groups: dict[Node, list[Node]] = {}
    for node in list(uf.parent):
        groups.setdefault(uf.find(node), []).append(node)
    const_at: dict[Node, list] = {}
    for ev in g.consts:
        const_at.setdefault(uf.find(ev[0]), []).append(ev)
    operand_roots = {uf.find(n) for n, _, _ in g.operands}
    expr_at: dict[Node, list[int]] = {}
    for k, e in enumerate(g.exprs):
        expr_at.setdefault(uf.find(e.target), []).append(k)

    def choose(root: Node, results: dict[int, str]) -> str:
        cols = [c for c in groups[root] if c[1] >= 0]
        decl = [(c, declared[c]) for c in sorted(cols) if c in declared]
        if decl:
            t0, loc0, name0 = decl[0][1]
            for _, (t, loc, name) in decl[1:]:
                if t != t0:
                    raise ProgramError(
                        f"{name} is declared {t} but is joined with {name0}, declared {t0} at {loc0}", loc
                    )
            return t0
        consts = {t for _, t, _, _, _ in const_at.get(root, ())}
        stored = {t for _, t, _, _, st in const_at.get(root, ()) if st} | {
            results[k] for k in expr_at.get(root, ()) if k in results
        }
        evidence = [data[c] for c in cols if c in data]
        if "str" in consts or any(not ev.numbers for ev in evidence):
            return "str"
        if "float" in stored:
            return "float"
        if any(not ev.all_int for ev in evidence):  # decimals: a float column only if used as one
            return "float" if consts or stored or root in operand_roots else "str"
        if "int" in stored or evidence:
            return "int"
        # only compared with constants (x < 1.5) or used in arithmetic
        if "float" in consts:
            return "float"
        return "int" if consts or root in operand_roots else "str"

    # the type of an expression depends on its operands' groups, which it may feed: iterate
    # (types only grow, int to float, so this ends)
    results: dict[int, str] = {}
    while True:
        group_type = {root: choose(root, results) for root in groups}

        def var_type(rule: str, v: Var) -> str:
            return group_type[uf.find(g.var_nodes[(rule, v)])]

        new = {k: _expr_type(e.term, var_type, e.rule) for k, e in enumerate(g.exprs)}
        if new == results:
            break
        results = new

    for root, cols_all in groups.items():
        typ = group_type[root]
        cols = [c for c in cols_all if c[1] >= 0]
        where = _colname(analysis, min(cols)) if cols else "its variable"
        for c, t, loc, what, stored in const_at.get(root, ()):
            if t == typ or (t != "str" and typ != "str" and not stored):  # compared as numbers
                continue
            hint = f"; write {what.split()[-1]}.0" if t == "int" and typ == "float" else ""
            c = g.first_column.get(c, c)
            raise ProgramError(
                f"{what} has type {t} but column {_colname(analysis, c) if c[1] >= 0 else where} is {typ}"
                f"{_why(cols, declared, data)}{hint}",
                loc,
            )
        for k in expr_at.get(root, ()):
            e = g.exprs[k]
            if results[k] != "str" and results[k] != typ:
                from selp.language.printer import format_term

                hint = " (add .0 to a constant, e.g. x + 1.0)" if typ == "float" else ""
                raise ProgramError(
                    f"{format_term(e.term)} is {results[k]} but {where} is {typ}{_why(cols, declared, data)}{hint}",
                    e.loc,
                )
        if typ == "int":
            for c in cols:
                ev = data.get(c)
                if ev is not None and not ev.all_int:
                    example = str(ev.example)
                    digits = example.lstrip("+-")
                    # an integer too long for 64 bits says so (it is no less an integer)
                    what = "does not fit in 64 bits" if digits.isascii() and digits.isdigit() else "is not an integer"
                    raise DataError(
                        f"value {echo(example)} {what}, but column {_colname(analysis, c)} is int",
                        ev.where,
                    )
        if typ == "float":
            for c in cols:
                ev = data.get(c)
                if ev is not None and not ev.numbers:
                    example = str(ev.non_number if ev.non_number is not None else ev.example)
                    raise DataError(
                        f"value {echo(example)} is not a number, but column {_colname(analysis, c)} is float",
                        ev.where,
                    )
    for n, loc, what in g.operands:
        if group_type[uf.find(n)] == "str":
            root = uf.find(n)
            cols = [c for c in groups[root] if c[1] >= 0]
            col = f" (column {_colname(analysis, min(cols))}{_why(cols, declared, data)})" if cols else ""
            raise ProgramError(f"{what} is a string{col}; arithmetic needs int or float", loc)
    return {
        rel: tuple(group_type[uf.find((rel, i))] for i in range(n))
        for rel, n in analysis.arities.items()
    }


def _term_text(t: Term) -> str:
    from selp.language.printer import format_term

    return format_term(t)


def _type_of(v: object) -> str:
    if isinstance(v, float):
        return "float"
    return "int" if isinstance(v, int) else "str"


def _show(v: object) -> str:
    from selp.values import format_value

    return format_value(v)  # type: ignore[arg-type]


def _colname(analysis: Analysis, c: Column) -> str:
    for d in analysis.program.decls:
        if d.relation == c[0]:
            return f"{c[0]}.{d.columns[c[1]][0]}"
    return f"{c[0]}#{c[1] + 1}"


def _why(cols: list[Column], declared: dict, data: dict[Column, DataEvidence]) -> str:
    for c in sorted(cols):
        if c in declared:
            return f" (declared at {declared[c][1]})"
    for c in sorted(cols):
        ev = data.get(c)
        if ev is not None and not ev.all_int:
            at = f" at {ev.where}" if ev.where is not None else ""
            return f" (its data holds {ev.example!r}{at})"
    return ""
