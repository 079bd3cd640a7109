"""Type checks of a ProQL query against a CDSS, before any evaluation ([Kar09] §7.3; [KIT10]).

Reported with the query position (:class:`~.parser.ProqlError`): an unknown relation or mapping;
an attribute not in the relation its variable is bound to; ``<m`` when the relation on the
step's target side is not a target of ``m`` (or the source side not a source); a variable used
before the FOR clause binds it, or as the wrong kind of node; a relation name in INCLUDE PATH; an
unknown semiring; a SET value the semiring does not have; an assignment that breaks the
mapping law m(0) = 0 (checked by running the mapping assignment on 0 for every mapping); and a
comparison of an ``int`` attribute with a string (or a ``str`` attribute with a number), which
could never hold.
"""

from __future__ import annotations

from typing import Any

from selp.cdss.compile import CompiledCDSS
from selp.cdss.proql import ast
from selp.cdss.proql.parser import ProqlError
from selp.cdss.proql.semirings import SEMIRINGS, Semiring, semiring
from selp.errors import SelpError, echo


_TYPE_WORDS = {"int": "an int", "str": "a string"}


class _Checker:
    def __init__(self, compiled: CompiledCDSS) -> None:
        names = compiled.names
        self.attrs = {names.base(r.ref): r.attribute_names for r in compiled.cdss.relations()}
        self.attr_types = {names.base(r.ref): {a.name: a.type for a in r.attributes} for r in compiled.cdss.relations()}
        self.targets = {m.name: {names.base(a.relation) for a in m.head} for m in compiled.cdss.mappings}
        self.sources = {m.name: {names.base(a.relation) for a in m.body} for m in compiled.cdss.mappings}
        self.types: dict[str, str | None] = {}  # tuple var -> relation (None: heterogeneous)
        self.mapvars: set[str] = set()

    def relation(self, name: str, loc) -> None:
        if name not in self.attrs:
            raise ProqlError(f"unknown relation {name} (relations: {', '.join(sorted(self.attrs))})", loc)

    def mapping(self, name: str, loc) -> None:
        if name not in self.targets:
            raise ProqlError(f"unknown mapping {name} (mappings: {', '.join(sorted(self.targets))})", loc)

    def path(self, p: ast.Path, binding: bool, include: bool = False) -> None:
        for n in p.nodes:
            if n.relation is not None:
                if include:
                    raise ProqlError(f"INCLUDE PATH names no relations ([{n.relation} ...]); restrict the variable in FOR or WHERE", n.loc)
                self.relation(n.relation, n.loc)
            if n.var is not None:
                if n.var in self.mapvars:
                    raise ProqlError(f"${n.var} is a mapping node, not a tuple node", n.loc)
                if n.var not in self.types:
                    if not binding:
                        raise ProqlError(f"${n.var} is not bound in the FOR clause", n.loc)
                    self.types[n.var] = n.relation
                elif n.relation is not None and self.types[n.var] is None:
                    self.types[n.var] = n.relation
        for i, s in enumerate(p.steps):
            if s.kind == "mapping":
                self.mapping(s.name, s.loc)
                left, right = self.rel_of(p.nodes[i]), self.rel_of(p.nodes[i + 1])
                if left is not None and left not in self.targets[s.name]:
                    raise ProqlError(f"mapping {s.name} does not derive {left} (its targets: {', '.join(sorted(self.targets[s.name]))})", s.loc)
                if right is not None and right not in self.sources[s.name]:
                    raise ProqlError(f"mapping {s.name} does not read {right} (its sources: {', '.join(sorted(self.sources[s.name]))})", s.loc)
            elif s.kind == "mapvar":
                if s.name in self.types:
                    raise ProqlError(f"${s.name} is a tuple node, not a mapping node", s.loc)
                if s.name not in self.mapvars and not binding:
                    raise ProqlError(f"${s.name} is not bound in the FOR clause", s.loc)
                self.mapvars.add(s.name)

    def rel_of(self, n: ast.NodePattern) -> str | None:
        return n.relation if n.relation is not None else self.types.get(n.var) if n.var else None

    def operand(self, o: ast.Operand, extra: dict[str, str | None]) -> None:
        if isinstance(o, ast.AttrRef):
            if o.var in self.mapvars:
                raise ProqlError(f"${o.var} is a mapping node; it has no attribute {o.attribute}", o.loc)
            if o.var not in self.types and o.var not in extra:
                raise ProqlError(f"${o.var} is not bound", o.loc)
            rel = self.types.get(o.var) if o.var in self.types else extra[o.var]
            if rel is not None and o.attribute not in self.attrs[rel]:
                raise ProqlError(f"relation {rel} has no attribute {o.attribute} (attributes: {', '.join(self.attrs[rel])})", o.loc)
            if rel is None and not any(o.attribute in a for a in self.attrs.values()):
                # a heterogeneous node may lack it (false at run time), but no relation has it
                raise ProqlError(f"no relation has an attribute {o.attribute}", o.loc)
        elif isinstance(o, ast.VarRef):
            if o.var not in self.types and o.var not in self.mapvars and o.var not in extra:
                raise ProqlError(f"${o.var} is not bound", o.loc)

    def operand_type(self, o: ast.Operand, extra: dict[str, str | None]) -> tuple[str, str] | None:
        """``(type, description)`` of an operand when it is known before evaluation: an attribute
        (of a heterogeneous node: when every relation having it agrees) or a quoted or numeric
        literal. Bare names and whole nodes have none."""
        if isinstance(o, ast.AttrRef):
            rel = self.types.get(o.var) if o.var in self.types else extra.get(o.var)
            rels = [rel] if rel is not None else [r for r, a in self.attr_types.items() if o.attribute in a]
            found = {self.attr_types[r][o.attribute] for r in rels}
            if len(found) != 1:
                return None
            where = f" (of {rel})" if rel is not None else ""
            return found.pop(), f"${o.var}.{o.attribute}{where}"
        if isinstance(o, ast.Literal) and not o.bare:
            if isinstance(o.value, str):
                return "str", echo(o.value, 40)
            return "int", str(o.value)  # an int or float literal orders against ints
        return None

    def same_types(self, c: ast.Comparison, extra: dict[str, str | None]) -> None:
        """Refuse a comparison of an int with a string: at run time it is silently false (never
        equal, never ordered), which reads as "no answers" rather than as the typo it is."""
        left, right = self.operand_type(c.left, extra), self.operand_type(c.right, extra)
        if left is None or right is None or left[0] == right[0]:
            return
        raise ProqlError(
            f"type mismatch: {left[1]} is {_TYPE_WORDS[left[0]]} but {right[1]} is {_TYPE_WORDS[right[0]]};"
            f" '{c.op}' between them never holds",
            c.loc,
        )

    def cond(self, c: ast.Condition, extra: dict[str, str | None]) -> None:
        if isinstance(c, (ast.And, ast.Or)):
            for p in c.parts:
                self.cond(p, extra)
        elif isinstance(c, ast.Not):
            self.cond(c.part, extra)
        elif isinstance(c, ast.Membership):
            self.relation(c.relation, c.loc)
            if c.var not in self.types and c.var not in extra:
                raise ProqlError(f"${c.var} is not a bound tuple node", c.loc)
        elif isinstance(c, ast.Comparison):
            self.operand(c.left, extra)
            self.operand(c.right, extra)
            for a, b in ((c.left, c.right), (c.right, c.left)):
                if isinstance(a, ast.VarRef) and a.var in self.mapvars:
                    if c.op not in ("=", "!=") or not (isinstance(b, ast.Literal) and b.bare):
                        raise ProqlError(f"compare the mapping node ${a.var} with a mapping name ($p = m1)", c.loc)
                    self.mapping(str(b.value), b.loc)
            self.same_types(c, extra)
        elif isinstance(c, ast.PathCondition):
            saved = dict(self.types), set(self.mapvars)
            self.path(c.path, binding=True)  # unbound variables are existential
            self.types, self.mapvars = saved


def check_query(q: ast.Query, compiled: CompiledCDSS) -> Semiring:
    """Check ``q`` against the CDSS; returns its semiring. Raises :class:`ProqlError`."""
    ch = _Checker(compiled)
    p = q.projection
    for path in p.for_paths:
        ch.path(path, binding=True)
    if p.where is not None:
        ch.cond(p.where, {})
    for path in p.include:
        ch.path(path, binding=False, include=True)
    for r in p.returns:
        if r.var not in ch.types and r.var not in ch.mapvars:
            raise ProqlError(f"RETURN ${r.var}: not bound in the FOR clause", r.loc)
    if q.semiring.upper() not in SEMIRINGS:
        raise ProqlError(f"unknown semiring {q.semiring} (semirings: {', '.join(SEMIRINGS)})", q.semiring_loc)
    s = semiring(q.semiring)
    if q.leaf is not None:
        for case in q.leaf.cases:
            if case.condition is not None:
                ch.cond(case.condition, {q.leaf.var: None})
            _check_value(case.value, s, {q.leaf.var}, None, ch)
    if q.mapping is not None:
        _check_mapping(q.mapping, s, compiled, ch)
    return s


def _check_value(v: ast.Value, s: Semiring, tuple_vars: set[str], arg: str | None, ch: _Checker) -> None:
    if isinstance(v, ast.Scale):
        if v.var != arg:
            raise ProqlError(f"SET ${v.var} * {v.factor}: only the mapping's argument can be scaled (SET ${arg or 'z'} * k)", v.loc)
        if v.factor < 0 or v.factor != v.factor or v.factor == float("inf"):
            raise ProqlError(f"a scale factor is a finite number >= 0, not {v.factor}", v.loc)
        try:
            s.scale(s.one, v.factor)
        except SelpError as e:
            raise ProqlError(e.message, v.loc) from None
        return
    if isinstance(v, ast.Call):
        if v.function != "edit_distance" or len(v.args) != 2:
            raise ProqlError(f"unknown function {v.function}/{len(v.args)} (known: edit_distance/2)", v.loc)
        if s.name != "WEIGHT" and s.name != "COUNT":
            raise ProqlError(f"edit_distance gives a number; {s.name} values are not numbers", v.loc)
        for a in v.args:
            if isinstance(a, ast.AttrRef):
                ch.operand(a, {x: None for x in tuple_vars})
        return
    if isinstance(v, ast.VarRef):
        if v.var != arg:
            raise ProqlError(f"SET ${v.var}: only the mapping's argument can be a value (SET ${arg or 'z'})", v.loc)
        return
    if isinstance(v, ast.AttrRef):
        raise ProqlError("SET $y.attr: a value of a tuple is not a semiring value (use a CASE per value)", v.loc)
    try:
        s.literal(v.value, v.bare, v.loc)
    except SelpError as e:
        raise ProqlError(e.message, v.loc) from None


def _check_mapping(a: ast.Assignment, s: Semiring, compiled: CompiledCDSS, ch: _Checker) -> None:
    from selp.cdss.proql.evaluate import mapping_function  # the evaluator's own reading of the clause

    ch.mapvars.add(a.var)
    for case in a.cases:
        if case.condition is not None:
            _check_mapping_cond(case.condition, a, s, ch)
        _check_value(case.value, s, set(), a.arg, ch)
    for m in compiled.cdss.mappings:
        f = mapping_function(a, s)
        out = f(m.name, s.zero)
        if out != s.zero:
            case = next((c for c in a.cases if c.value is not None and _fires(c, m.name, s, a)), a)
            raise ProqlError(
                f"the assignment for mapping {m.name} gives {s.format(out)} on {s.format(s.zero)}, but a mapping"
                f" must map {s.name}'s 0 ({s.format(s.zero)}) to 0; guard the CASE with ${a.arg} != {s.format(s.zero)}",
                case.loc,
            )
        _check_additive(a, s, m.name, f)


def _samples(a: ast.Assignment, s: Semiring) -> list[Any]:
    """Values to test additivity on: 1, tokens (POLYNOMIAL), and the values the CASEs compare
    the argument with, with their neighbours (a CASE on $z = 2 is tested at 1 + 1, 2, 3)."""
    out = [s.one, s.plus(s.one, s.one)]
    if s.name == "POLYNOMIAL":
        out += [s.leaf_default("x"), s.leaf_default("y")]
    found: list[Any] = []

    def visit(c: ast.Condition | None) -> None:
        if isinstance(c, (ast.And, ast.Or)):
            for p in c.parts:
                visit(p)
        elif isinstance(c, ast.Not):
            visit(c.part)
        elif isinstance(c, ast.Comparison):
            for x, y in ((c.left, c.right), (c.right, c.left)):
                if isinstance(x, ast.VarRef) and x.var == a.arg and isinstance(y, ast.Literal):
                    found.append(s.literal(y.value, y.bare, y.loc))

    for case in a.cases:
        visit(case.condition)
    for v in found:
        out += [v, s.plus(v, s.one)]
    return [v for v in out if v != s.zero]


def _check_additive(a: ast.Assignment, s: Semiring, mapping: str, f: Any) -> None:
    """COUNT and POLYNOMIAL are not idempotent: a mapping function must be additive there,
    m(a + b) = m(a) + m(b) ([Kar09] §4.3), or a count comes out wrong silently (a constant
    ``SET 1`` counts two derivations as one). The idempotent semirings need no check (a
    constant c gives c + c = c)."""
    if s.name not in ("COUNT", "POLYNOMIAL"):
        return
    samples = _samples(a, s)
    for x in samples:
        for y in samples:
            whole, parts = f(mapping, s.plus(x, y)), s.plus(f(mapping, x), f(mapping, y))
            if whole != parts:
                raise ProqlError(
                    f"the assignment for mapping {mapping} is not additive: it gives {s.format(whole)} on"
                    f" {s.format(s.plus(x, y))} but {s.format(parts)} on its parts {s.format(x)} and {s.format(y)};"
                    f" {s.name} needs m(a + b) = m(a) + m(b) (SET ${a.arg}, SET ${a.arg} * k or SET 0 are additive)",
                    a.loc,
                )


def _fires(case: ast.Case, mapping: str, s: Semiring, a: ast.Assignment) -> bool:
    from selp.cdss.proql.evaluate import mapping_condition

    return case.condition is None or mapping_condition(case.condition, a, s, mapping, s.zero)


def _check_mapping_cond(c: ast.Condition, a: ast.Assignment, s: Semiring, ch: _Checker) -> None:
    if isinstance(c, (ast.And, ast.Or)):
        for p in c.parts:
            _check_mapping_cond(p, a, s, ch)
    elif isinstance(c, ast.Not):
        _check_mapping_cond(c.part, a, s, ch)
    elif isinstance(c, ast.Comparison):
        for x, y in ((c.left, c.right), (c.right, c.left)):
            if isinstance(x, ast.VarRef) and x.var == a.var:
                ch.cond(c, {})
                return
            if isinstance(x, ast.VarRef) and x.var == a.arg:
                if not isinstance(y, ast.Literal) or c.op not in ("=", "!="):
                    raise ProqlError(f"compare the argument ${a.arg} with a {s.name} value by = or !=", c.loc)
                _check_value(y, s, set(), None, ch)
                return
        raise ProqlError(f"a mapping CASE tests ${a.var} (the mapping) and ${a.arg} (its argument)", c.loc)
    else:
        raise ProqlError(f"a mapping CASE tests ${a.var} (the mapping) and ${a.arg} (its argument)", c.loc)


def resolve_relations(q: ast.Query, compiled: CompiledCDSS) -> ast.Query:
    """``q`` with every peer-qualified relation name (``[PBioSQL.B $x]``, ``$y in PuBio.U``)
    replaced by the relation's base name in the compiled program (``B``, or ``PBioSQL_B`` when
    two peers have a relation ``B``). An unqualified name is left to :func:`check_query`."""
    from dataclasses import replace

    names = compiled.names
    qualified = {f"{r.peer}.{r.name}": names.base(r.ref) for r in compiled.cdss.relations()}
    peers = {p.name for p in compiled.cdss.peers}

    def rel(name: str | None, loc) -> str | None:
        if name is None or "." not in name:
            return name
        if name in qualified:
            return qualified[name]
        peer = name.split(".", 1)[0]
        if peer not in peers:
            raise ProqlError(f"unknown peer {peer} in {name} (peers: {', '.join(sorted(peers))})", loc)
        own = sorted(k.split(".", 1)[1] for k in qualified if k.startswith(peer + "."))
        raise ProqlError(f"peer {peer} has no relation {name.split('.', 1)[1]} (its relations: {', '.join(own)})", loc)

    def path(p: ast.Path) -> ast.Path:
        return replace(p, nodes=tuple(replace(n, relation=rel(n.relation, n.loc)) for n in p.nodes))

    def cond(c):
        if c is None:
            return None
        if isinstance(c, (ast.And, ast.Or)):
            return replace(c, parts=tuple(cond(x) for x in c.parts))
        if isinstance(c, ast.Not):
            return replace(c, part=cond(c.part))
        if isinstance(c, ast.Membership):
            return replace(c, relation=rel(c.relation, c.loc))
        if isinstance(c, ast.PathCondition):
            return replace(c, path=path(c.path))
        return c

    def assignment(a: ast.Assignment | None) -> ast.Assignment | None:
        if a is None:
            return None
        return replace(a, cases=tuple(replace(k, condition=cond(k.condition)) for k in a.cases))

    p = q.projection
    proj = replace(p, for_paths=tuple(path(x) for x in p.for_paths), where=cond(p.where), include=tuple(path(x) for x in p.include))
    return replace(q, projection=proj, leaf=assignment(q.leaf), mapping=assignment(q.mapping))
