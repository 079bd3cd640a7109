"""Static checks of a program and its stratification.

:func:`analyze` raises :class:`~selp.errors.ProgramError` (located) on the first problem: arity
mismatches, unsafe variables, Skolem terms outside heads, duplicate rule names, a relation that has
both rules and inline facts, negation through recursion, or an aggregate that cannot be
stratified (``count``/``sum`` through recursion; ``min``/``max`` through recursion are evaluated
with aggregate selection, see docs/language.md). It returns the program's evaluation plan: the IDB
relations grouped into strongly connected components in dependency order.
"""

from __future__ import annotations

from dataclasses import dataclass

from selp.errors import Location, ProgramError
from selp.language.ast import AGGREGATE_FNS, Aggregate, Arith, Atom, Comparison, Const, Program, Rule, SkolemTerm, Term, Var, has_arith, term_vars
from selp.scc import strongly_connected


@dataclass(frozen=True)
class Component:
    """A strongly connected set of IDB relations, evaluated together (semi-naively if recursive)."""

    relations: tuple[str, ...]
    rules: tuple[Rule, ...]
    recursive: bool
    stratum: int
    # relations of the component that aggregate through the recursion (min/max): evaluated with
    # aggregate selection, only a group's improvements propagating (empty: plain semi-naive)
    selective: tuple[str, ...] = ()


@dataclass(frozen=True)
class Analysis:
    """A validated program with its relations and evaluation order."""

    program: Program
    arities: dict[str, int]
    edb: frozenset[str]
    idb: frozenset[str]
    components: tuple[Component, ...]

    @property
    def strata(self) -> list[list[str]]:
        """IDB relations per stratum (negation level), in evaluation order."""
        out: dict[int, list[str]] = {}
        for c in self.components:
            out.setdefault(c.stratum, []).extend(c.relations)
        return [sorted(out[s]) for s in sorted(out)]


def analyze(program: Program, counting: bool = False) -> Analysis:
    """Validate ``program`` and compute its components; raises :class:`ProgramError`.

    ``counting`` is for evaluation over Z-relations (:mod:`selp.adapt`), where a negated head
    ``-q(x) :- s(x).`` subtracts counts; set-semantics engines refuse such rules. A negated head
    is never allowed in a recursion (counts through a cycle are unbounded)."""
    arities = _check_arities(program)
    _check_names(program)
    idb = frozenset(program.idb)
    for f in program.facts:
        if f.atom.relation in idb:
            raise ProgramError(
                f"relation {f.atom.relation} has both rules and input facts; put the facts in"
                f" another relation (e.g. {f.atom.relation}_edb) and add a copy rule"
                f" {_copy_rule(f.atom.relation, f.atom.arity)}",
                f.loc,
            )
    for r in program.rules:
        _check_rule(r)
    _check_aggregates(program)
    components = _components(program, idb)
    _check_negated_heads(program, components, counting)
    edb = frozenset(arities) - idb
    return Analysis(program, arities, edb, idb, components)


def _check_negated_heads(program: Program, components: tuple[Component, ...], counting: bool) -> None:
    recursive = {rel for c in components if c.recursive for rel in c.relations}
    for r in program.rules:
        if not r.head.negated:
            continue
        if r.head.relation in recursive:
            raise ProgramError(
                f"negated head -{r.head.relation}(...) in rule {r.name}: {r.head.relation} is recursive;"
                " subtracting rules are allowed only outside recursion (counts through a cycle are unbounded)",
                r.head.loc,
            )
        if not counting:
            raise ProgramError(
                f"negated head -{r.head.relation}(...) in rule {r.name} subtracts counts; only counting"
                " (Z-relation) evaluation supports it, not set-semantics engines",
                r.head.loc,
            )


def _copy_rule(rel: str, arity: int) -> str:
    vs = ", ".join(f"x{i}" for i in range(1, arity + 1))
    return f"{rel}({vs}) :- {rel}_edb({vs})."


def _check_arities(program: Program) -> dict[str, int]:
    seen: dict[str, tuple[int, Location, str]] = {}

    def use(rel: str, arity: int, loc: Location, what: str) -> None:
        if rel in seen and seen[rel][0] != arity:
            n, first, w = seen[rel]
            raise ProgramError(
                f"arity mismatch: {rel} has {arity} argument(s) here but {n} in its {w} at {first}",
                loc,
            )
        seen.setdefault(rel, (arity, loc, what))

    decl_locs: dict[str, Location] = {}
    for d in program.decls:
        if d.relation in decl_locs:
            raise ProgramError(f"relation {d.relation} is declared twice (first at {decl_locs[d.relation]})", d.loc)
        decl_locs[d.relation] = d.loc
        names = [c for c, _ in d.columns]
        dup = {c for c in names if names.count(c) > 1}
        if dup:
            raise ProgramError(f"column {sorted(dup)[0]} is declared twice in {d.relation}", d.loc)
        use(d.relation, d.arity, d.loc, "declaration")
    for r in program.rules:
        use(r.head.relation, r.head.arity, r.head.loc, "use")
        for b in r.body:
            if isinstance(b, Atom):
                use(b.relation, b.arity, b.loc, "use")
    for f in program.facts:
        use(f.atom.relation, f.atom.arity, f.loc, "use")
    return {rel: v[0] for rel, v in seen.items()}


def _check_names(program: Program) -> None:
    names: dict[str, Location] = {}
    skolems: dict[str, tuple[int, Location]] = {}
    for r in program.rules:
        if r.name in names:
            raise ProgramError(f"rule name {r.name} is used twice (first at {names[r.name]})", r.loc)
        names[r.name] = r.loc
        stack = list(r.head.args)
        while stack:
            t = stack.pop()
            if isinstance(t, SkolemTerm):
                n = len(t.args)
                if t.fn in skolems and skolems[t.fn][0] != n:
                    raise ProgramError(
                        f"Skolem function {t.fn} has {n} argument(s) here but {skolems[t.fn][0]}"
                        f" at {skolems[t.fn][1]}",
                        r.head.loc,
                    )
                skolems.setdefault(t.fn, (n, r.head.loc))
                stack.extend(t.args)


def _check_aggregates(program: Program) -> None:
    """Every rule of an aggregated relation aggregates alike: same functions, same positions."""
    first: dict[str, Rule] = {}
    for r in program.rules:
        rel = r.head.relation
        if rel not in first:
            first[rel] = r
            continue

        def shown(x: Rule) -> str:
            aggs = x.aggregates
            return ", ".join(f"{t.fn}(...) at argument {p + 1}" for p, t in aggs) if aggs else "no aggregate"

        other = first[rel]
        if [(p, t.fn) for p, t in r.aggregates] != [(p, t.fn) for p, t in other.aggregates]:
            raise ProgramError(
                f"rule {r.name} of {rel} has {shown(r)} but rule {other.name} ({other.loc})"
                f" has {shown(other)}; every rule of an aggregated relation aggregates alike",
                r.head.loc,
            )


def _check_head_aggregate(r: Rule) -> None:
    for _, t in r.aggregates:
        a = t.arg
        if not (isinstance(a, Var) and not a.anonymous) and not isinstance(a, Arith):
            raise ProgramError(
                f"the argument of {t.fn}(...) in rule {r.name} must be a variable or an arithmetic"
                " expression over bound variables",
                r.head.loc,
            )
        if _has_skolem(a):
            raise ProgramError(f"Skolem term inside {t.fn}(...) in rule {r.name}", r.head.loc)


def _check_rule(r: Rule) -> None:
    bound: set[Var] = set()
    _check_head_aggregate(r)
    for a in r.positive_atoms + r.negative_atoms:
        for t in a.args:
            if isinstance(t, SkolemTerm) and t.fn in AGGREGATE_FNS and len(t.args) == 1:
                raise ProgramError(
                    f"aggregate {t.fn}(...) in a body atom of rule {r.name}; aggregates may appear"
                    " only as an argument of a rule head",
                    a.loc,
                )
    for a in r.positive_atoms:
        for t in a.args:
            if isinstance(t, SkolemTerm):
                raise ProgramError(
                    f"Skolem term {t.fn}(...) in a body atom; Skolem terms may appear only in heads",
                    a.loc,
                )
            _no_arith_in_atom(r, a, t)
        bound.update(v for v in a.vars())
    for c in r.comparisons:
        for t in (c.left, c.right):
            if isinstance(t, SkolemTerm) or (isinstance(t, Arith) and _has_skolem(t)):
                raise ProgramError(f"Skolem term in a comparison of rule {r.name}; Skolem terms may appear only in heads", c.loc)
    for t in r.head.args:
        if isinstance(t, SkolemTerm) and has_arith(t):
            raise ProgramError(
                f"arithmetic inside the Skolem term {t.fn}(...) of rule {r.name}; bind it to a variable"
                " first (c = x + 1) and pass the variable",
                r.head.loc,
            )
    bound.update(v for _, v, _ in r.assignments())
    negated = r.negative_atoms
    for a in negated:
        local = r.negation_locals(a)
        for t in a.args:
            if isinstance(t, SkolemTerm):
                raise ProgramError(f"Skolem term {t.fn}(...) in a negated atom", a.loc)
            _no_arith_in_atom(r, a, t)
            if isinstance(t, Var) and not t.anonymous and t not in bound and t not in local:
                # local to no negation: it occurs elsewhere, but nowhere that binds it
                others = [b for b in negated if b is not a and t in set(b.vars())]
                where = (
                    "it occurs only in negated atoms, so it is local to none of them"
                    " (a variable local to a negation occurs in that one atom only)"
                    if others and not _occurs_outside_negations(r, t)
                    else "a variable of a negated atom must occur in a positive body atom, or in"
                    " that negated atom only (then it means 'for no value')"
                )
                raise ProgramError(f"unsafe variable {t.name} in rule {r.name}: {where}", a.loc)
    for c in r.comparisons:
        # the variables of an expression first: in c = y + 1, y is the one to bind
        lone = {t for t in (c.left, c.right) if isinstance(t, Var)}
        for t in sorted(c.vars(), key=lambda v: v in lone):
            if t.anonymous or t not in bound:
                shown = "_" if t.anonymous else t.name
                raise ProgramError(
                    f"unsafe variable {shown} in rule {r.name}: a compared variable must occur in a"
                    " positive body atom or be assigned (c = expression over bound variables)",
                    c.loc,
                )
    for v in r.head.vars():
        if v.anonymous:
            raise ProgramError(f"'_' in the head of rule {r.name}; head arguments must be bound", r.head.loc)
        if v not in bound:
            raise ProgramError(
                f"unsafe variable {v.name} in rule {r.name}: every head variable must occur in a"
                " positive body atom or be assigned (c = expression over bound variables)",
                r.head.loc,
            )


def _no_arith_in_atom(r: Rule, a: Atom, t: Term) -> None:
    if isinstance(t, Arith):
        raise ProgramError(
            f"arithmetic in a body atom of rule {r.name}; bind it to a variable first"
            f" (c = expression) and use the variable in {a.relation}(...)",
            a.loc,
        )


def _has_skolem(t: Term) -> bool:
    return isinstance(t, SkolemTerm) or (isinstance(t, (Arith, Aggregate)) and any(_has_skolem(a) for a in t.args))


def _occurs_outside_negations(r: Rule, v: Var) -> bool:
    return v in set(r.head.vars()) or any(
        v in set(b.vars()) for b in r.body if not (isinstance(b, Atom) and b.negated)
    )


def _components(program: Program, idb: frozenset[str]) -> tuple[Component, ...]:
    """Tarjan's SCCs over IDB dependencies, emitted dependencies-first, with negation checks."""
    deps: dict[str, set[str]] = {rel: set() for rel in sorted(idb)}
    neg: dict[tuple[str, str], Atom] = {}
    # an aggregate reads complete relations, as a negation does (min/max may also recurse)
    agg: dict[tuple[str, str], tuple[Rule, Atom]] = {}
    for r in program.rules:
        for a in r.positive_atoms + r.negative_atoms:
            if a.relation in idb:
                deps[r.head.relation].add(a.relation)
                if a.negated:
                    neg.setdefault((r.head.relation, a.relation), a)
                elif r.aggregate is not None:
                    agg.setdefault((r.head.relation, a.relation), (r, a))

    # a component after every component it reads; sorted for reproducible output
    sccs = [sorted(c) for c in strongly_connected(sorted(idb), lambda v: sorted(deps[v]))]

    comp_of = {rel: i for i, comp in enumerate(sccs) for rel in comp}
    for (head, body), atom in sorted(neg.items()):
        if head == body:
            raise ProgramError(
                f"program is not stratifiable: {head} depends negatively on itself", atom.loc
            )
        if comp_of[head] == comp_of[body]:
            cycle = _cycle(deps, body, head)
            raise ProgramError(
                f"program is not stratifiable: {head} depends negatively on {body}, which depends"
                f" on {head} ({' -> '.join(cycle)}); negation through recursion is not allowed",
                atom.loc,
            )
    selective = _check_recursive_aggregates(program, deps, comp_of, agg)
    stratum: dict[int, int] = {}
    components = []
    for i, comp in enumerate(sccs):  # Tarjan emits SCCs in reverse topological order: deps first
        s = 0
        for rel in comp:
            for d in deps[rel]:
                j = comp_of[d]
                if j != i:
                    s = max(s, stratum[j] + (1 if (rel, d) in neg or (rel, d) in agg else 0))
        stratum[i] = s
        members = set(comp)
        rules = tuple(r for r in program.rules if r.head.relation in members)
        recursive = any(a.relation in members for r in rules for a in r.positive_atoms)
        sel = tuple(rel for rel in comp if rel in selective)
        components.append(Component(tuple(comp), rules, recursive, s, sel))
    return tuple(components)


def _check_recursive_aggregates(
    program: Program, deps: dict[str, set[str]], comp_of: dict[str, int], agg: dict[tuple[str, str], tuple[Rule, Atom]]
) -> set[str]:
    """The relations that aggregate through recursion (min/max only); every relation of their
    component must aggregate with min or max too, so that each group keeps one best value."""
    selective: set[str] = set()
    aggregated = program.aggregated()
    for (head, body), (r, atom) in sorted(agg.items()):
        if comp_of[head] != comp_of[body]:
            continue
        fn = next((f for f in aggregated[head].fns if f not in ("min", "max")), None)
        if fn is not None:
            over = "itself" if head == body else f"{body}, which depends on {head} ({' -> '.join(_cycle(deps, body, head))})"
            raise ProgramError(
                f"{fn}(...) through recursion in rule {r.name}: {head} aggregates over {over};"
                " count and sum need complete relations (only min and max may aggregate through recursion)",
                atom.loc,
            )
        selective.add(head)
    for rel in sorted(selective):
        for other in sorted(deps):
            if comp_of[other] == comp_of[rel] and other not in aggregated:
                r = next(x for x in program.rules if x.head.relation == other)
                raise ProgramError(
                    f"{other} is in a recursion with {rel}, which aggregates with"
                    f" {aggregated[rel].fns[0]}(...) through it: every relation of such a recursion"
                    f" must aggregate with min or max (fold {other}'s rules into {rel}'s)",
                    r.head.loc,
                )
            bad = next((f for f in aggregated[other].fns if f not in ("min", "max")), None) if other in aggregated else None
            if comp_of[other] == comp_of[rel] and bad is not None:
                r = next(x for x in program.rules if x.head.relation == other)
                raise ProgramError(
                    f"{bad}(...) through recursion in rule {r.name}: {other} is in a"
                    f" recursion with {rel}; only min and max may aggregate through recursion",
                    r.head.loc,
                )
    # every aggregated relation of such a component is selective
    comps = {comp_of[rel] for rel in selective}
    out = selective | {rel for rel in aggregated if comp_of[rel] in comps}
    for r in program.rules:
        members = {x for x in out if comp_of[x] == comp_of.get(r.head.relation)}
        if r.head.relation in out and any(len(aggregated[m].positions) > 1 for m in members):
            _check_own_columns(r, members, aggregated)
    return out


def _check_own_columns(r: Rule, members: set[str], aggregated: dict) -> None:
    """In a recursion whose relations have several aggregates, aggregate ``k`` of the head may
    read aggregate ``k`` of the recursive body atoms and nothing else may: each aggregate is
    selected on its own (a group's fact mixes the best of each, from different derivations), so
    a value that crossed to another aggregate, a filter or a join would pair values of different
    derivations -- not exact. Raises a located :class:`ProgramError`."""
    heads = {id(t): k for k, (_, t) in enumerate(r.aggregates)}
    assigned = {v: e for _, v, e in r.assignments()}
    assigning = {i for i, _, _ in r.assignments()}
    for a in r.positive_atoms:
        if a.relation not in members:
            continue
        for k, p in enumerate(aggregated[a.relation].positions):
            v = a.args[p]
            if isinstance(v, Var) and v.anonymous:
                continue
            where = f"the value of aggregate {k + 1} of {a.relation} (argument {p + 1}) in rule {r.name}"
            if not isinstance(v, Var):
                raise ProgramError(f"{where} must be a variable: a recursion with several aggregates selects each on its own", a.loc)
            # the variables computed from v, through assignments
            flow, todo = {v}, [v]
            while todo:
                x = todo.pop()
                for y, e in assigned.items():
                    if y not in flow and x in set(term_vars(e)):
                        flow.add(y)
                        todo.append(y)
            uses = [b for b in r.body if b is not a and not (isinstance(b, Comparison) and r.body.index(b) in assigning) and flow & set(b.vars())]
            uses += [b for b in r.body if b is a and sum(1 for t in a.args if t == v) > 1]
            keys = [t for t in r.head.args if id(t) not in heads and flow & set(term_vars(t))]
            others = [j for _, t in r.aggregates if flow & set(term_vars(t.arg)) for j in [heads[id(t)]] if j != k]
            if uses or keys or others:
                what = (f"aggregate {others[0] + 1} of the head" if others else "the group key of the head" if keys
                        else "a filter or a join")
                raise ProgramError(
                    f"{where} is read by {what}: in a recursion with several aggregates, aggregate"
                    f" {k + 1} of the head may read only aggregate {k + 1} of the recursive atoms"
                    " (each aggregate is selected on its own, so mixing them is not exact)",
                    (uses[0].loc if uses else r.head.loc),
                )


def _cycle(deps: dict[str, set[str]], start: str, goal: str) -> list[str]:
    """A dependency path start -> ... -> goal (both in one SCC), for error messages."""
    prev: dict[str, str | None] = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        if v == goal:
            break
        for w in sorted(deps[v]):
            if w not in prev:
                prev[w] = v
                queue.append(w)
    path = [goal]
    while prev[path[-1]] is not None:
        path.append(prev[path[-1]])  # type: ignore[arg-type]
    path.reverse()
    return [goal + " -> not " + path[0]] + path[1:] if path[0] != goal else path
