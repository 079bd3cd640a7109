"""Column types: declared, or inferred from the program's constants and the data.

The rule, also stated in the README:

* A column declared with ``.decl R(a: int, b: str)`` has that type.
* Otherwise columns that the program connects (a variable shared between positions, a variable
  passed from body to head, ``x = y``) form one group and get one type: ``int`` when nothing
  in the group is a string, i.e. every constant the program puts there is an integer and every cell
  of every data file column in the group reads as a 64-bit integer (``-12``, ``+7``, ``007``);
  ``str`` otherwise, and also when there is no evidence at all.
* Integers are canonicalised (``007`` and ``7`` are the same value); in a ``str`` group they stay
  text. A string constant in an ``int`` group, or an integer constant in a group that the data
  makes ``str``, is an error, as is a non-integer cell in a column declared ``int``.
* Skolem values (labeled nulls) fit a column of either type.
"""

from __future__ import annotations

from dataclasses import dataclass

from selp.errors import DataError, Location, ProgramError, echo
from selp.language.ast import Atom, Comparison, Const, Var
from selp.language.validate import Analysis

Column = tuple[str, int]


@dataclass(frozen=True)
class DataEvidence:
    """What a data file column says about its type."""

    all_int: bool
    example: str | None = None  # a non-integer cell, for messages
    where: Location | None = None  # where that cell is


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


def resolve_types(
    analysis: Analysis, data: dict[Column, DataEvidence] | None = None
) -> dict[str, tuple[str, ...]]:
    """Assign ``"str"``/``"int"`` to every column of every relation (see module docstring)."""
    program = analysis.program
    data = data or {}
    uf = UnionFind()
    for rel, n in analysis.arities.items():
        for i in range(n):
            uf.find((rel, i))
    # (column, type, location, description) evidence from program constants
    consts: list[tuple[Column, str, Location, str]] = []
    # comparisons of a variable with a constant constrain the variable's column group
    for r in program.rules:
        first: dict[Var, Column] = {}
        for a in [r.head] + [b for b in r.body if isinstance(b, Atom)]:
            for i, t in enumerate(a.args):
                if isinstance(t, Var) and not t.anonymous:
                    if t in first:
                        uf.union(first[t], (a.relation, i))
                    else:
                        first[t] = (a.relation, i)
                elif isinstance(t, Const):
                    consts.append(((a.relation, i), _type_of(t.value), a.loc, f"constant {_show(t.value)}"))
        for c in r.comparisons:
            lv, rv = c.left, c.right
            if isinstance(lv, Var) and isinstance(rv, Var):
                uf.union(first[lv], first[rv])
            for v, o in ((lv, rv), (rv, lv)):
                if isinstance(v, Var) and isinstance(o, Const):
                    consts.append((first[v], _type_of(o.value), c.loc, f"constant {_show(o.value)}"))
            if isinstance(lv, Const) and isinstance(rv, Const) and _type_of(lv.value) != _type_of(rv.value):
                raise ProgramError(f"comparison {_show(lv.value)} {c.op} {_show(rv.value)} mixes a string and an integer", c.loc)
    for f in program.facts:
        for i, t in enumerate(f.atom.args):
            assert isinstance(t, Const)
            consts.append(((f.atom.relation, i), _type_of(t.value), f.loc, f"value {_show(t.value)}"))

    declared: dict[Column, tuple[str, Location, str]] = {}
    for d in program.decls:
        for i, (cname, ctype) in enumerate(d.columns):
            declared[(d.relation, i)] = (ctype, d.loc, f"{d.relation}.{cname}")

    groups: dict[Column, list[Column]] = {}
    for col in list(uf.parent):
        groups.setdefault(uf.find(col), []).append(col)
    group_type: dict[Column, str] = {}
    for root, cols in groups.items():
        decl = [(c, declared[c]) for c in sorted(cols) if c in declared]
        if decl:
            t0, loc0, name0 = decl[0][1]
            for _, (t, loc, name) in decl[1:]:
                if t != t0:
                    raise ProgramError(
                        f"{name} is declared {t} but is joined with {name0}, declared {t0} at {loc0}", loc
                    )
            typ = t0
        else:
            typ = "int"
            has_evidence = False
            for c in cols:
                ev = data.get(c)
                if ev is not None:
                    has_evidence = True
                    if not ev.all_int:
                        typ = "str"
            for c, t, _, _ in consts:
                if uf.find(c) == root:
                    has_evidence = True
                    if t == "str":
                        typ = "str"
            if not has_evidence:
                typ = "str"
        # check every piece of evidence against the chosen type
        for c, t, loc, what in consts:
            if uf.find(c) == root and t != typ:
                raise ProgramError(
                    f"{what} has type {t} but column {_colname(analysis, c)} is {typ}"
                    f"{_why(cols, declared, data)}",
                    loc,
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
        group_type[root] = typ
    return {
        rel: tuple(group_type[uf.find((rel, i))] for i in range(n))
        for rel, n in analysis.arities.items()
    }


def _type_of(v: object) -> str:
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
