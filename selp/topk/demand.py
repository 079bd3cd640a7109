"""Goal-directed evaluation: a demand (magic-sets) rewriting of the instrumented program.

When a query binds constants at the pattern's root (``selp explain 'path(0, 1)'``, ``--fact``),
only facts that can occur in a derivation of a bound root fact matter. The rewriting (Bancilhon,
Maier, Sagiv and Ullman, "Magic sets and other strange ways to implement logic programs", PODS
1986; generalised magic sets with one adornment per relation) adds, for each *restricted*
relation ``R`` with bound positions ``B``, a demand relation ``demand@R`` over ``B``:

* every rule of ``R`` gets ``demand@R(head terms at B)`` as an extra first body atom -- a filter;
* for every restricted body atom ``S(...)`` of such a rule, taken in a sideways order (atoms with
  the most bound arguments first), a rule ``demand@S(terms at B_S) :- demand@R(...), <the atoms
  before S>`` says which facts of ``S`` the rule can use;
* the root's constants seed ``demand@root``.

``B_S`` is the intersection of the positions bound at every occurrence of ``S``, so one demand
relation per relation suffices; a relation bound nowhere, any relation reached through negation
(magic sets would break stratification), the ``agg@`` copies that witness rules of aggregates
read (:mod:`selp.instrument.witness`) and everything a fully computed relation reads are
evaluated in full. The demand atoms are filters, never children: a rule instance of the rewritten
program is the same instance of P_p with the demand atom dropped, so trees map back exactly, and
every fact in a derivation of a demanded fact is itself demanded (induction on the derivation),
so its k best trees are the same as under full evaluation.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from selp.instrument.witness import is_filter_relation
from selp.language.ast import Aggregate, Atom, Comparison, Const, Program, Rule, SkolemTerm, Var
from selp.values import Value

PREFIX = "demand@"


def is_demand(relation: str) -> bool:
    """Whether ``relation`` is a demand relation added by :func:`rewrite`."""
    return relation.startswith(PREFIX)


@dataclass
class Demand:
    """The rewritten program and what was restricted."""

    program: Program
    bound: dict[str, tuple[int, ...]]  # restricted relation -> its bound positions
    types: dict[str, tuple[str, ...]]  # column types of the demand relations
    dropped_rules: int  # rules no answer can use


def _sips(rule: Rule, bound: set[Var]) -> list[int]:
    """Positive body atoms in a sideways order: most bound arguments first, body order on ties."""
    left = [i for i, b in enumerate(rule.body) if isinstance(b, Atom) and not b.negated]
    order: list[int] = []
    known = set(bound)
    while left:
        def score(i: int) -> tuple[int, int]:
            a: Atom = rule.body[i]  # type: ignore[assignment]
            nb = sum(1 for t in a.args if isinstance(t, Const) or (isinstance(t, Var) and t in known))
            return (-nb, i)

        best = min(left, key=score)
        left.remove(best)
        order.append(best)
        known.update(rule.body[best].vars())  # type: ignore[union-attr]
    return order


def rewrite(
    program: Program,
    roots: dict[str, dict[int, Value]],
    types: dict[str, tuple[str, ...]],
) -> Demand | None:
    """Rewrite ``program`` for the root relations' bound positions (``{root: {position: value}}``).

    Returns None when nothing can be restricted (no constant reaches a recursive or derived
    relation), so the caller evaluates in full."""
    idb = {r.head.relation for r in program.rules}
    by_head: dict[str, list[Rule]] = {}
    for r in program.rules:
        by_head.setdefault(r.head.relation, []).append(r)
    # relations any answer can use at all
    needed: set[str] = set()
    stack = [r for r in roots if r in idb]
    while stack:
        rel = stack.pop()
        if rel in needed:
            continue
        needed.add(rel)
        for r in by_head.get(rel, []):
            for b in r.body:
                if isinstance(b, Atom) and b.relation in idb:
                    stack.append(b.relation)
    # positions a Skolem term fills can never be bound by a demand (no Skolem terms in bodies), nor
    # can an aggregate's: its value is known only once the whole group is, so a constant there
    # restricts nothing (the group key positions may be bound: a demanded group keeps all its
    # instances, so its aggregate is exact)
    skolem_pos = {
        rel: {p for r in rs for p, t in enumerate(r.head.args) if isinstance(t, (SkolemTerm, Aggregate))}
        for rel, rs in by_head.items()
    }
    # an aggregated relation's agg@ copy is computed in full: the witness rules that read it
    # would otherwise feed its demand, a recursion through its aggregate
    full: set[str] = {rel for rel in needed if is_filter_relation(rel)}
    for r in program.rules:
        if r.head.relation in needed:
            full.update(b.relation for b in r.body if isinstance(b, Atom) and b.negated and b.relation in idb)
    bound: dict[str, set[int]] = {}
    for rel, consts in roots.items():
        if rel in idb:
            bound[rel] = set(consts) - skolem_pos.get(rel, set())
    changed = True
    while changed:
        changed = False
        full = _close_full(full, by_head, idb)
        for rel in list(bound):
            if not bound[rel] and rel not in full:
                full.add(rel)
                changed = True
        for rel in sorted(needed):
            if rel in full or rel not in bound:
                continue
            for r in by_head[rel]:
                known = {t for p, t in enumerate(r.head.args) if p in bound[rel] and isinstance(t, Var)}
                for i in _sips(r, known):
                    a: Atom = r.body[i]  # type: ignore[assignment]
                    if a.relation in idb and a.relation not in full:
                        ad = {p for p, t in enumerate(a.args) if isinstance(t, Const) or (isinstance(t, Var) and t in known)}
                        ad -= skolem_pos.get(a.relation, set())
                        new = ad if a.relation not in bound else bound[a.relation] & ad
                        if a.relation not in bound or new != bound[a.relation]:
                            bound[a.relation] = new
                            changed = True
                    known.update(a.vars())
    restricted = {rel: tuple(sorted(ps)) for rel, ps in bound.items() if rel not in full and ps and rel in needed}
    if not restricted:
        return None
    rules: list[Rule] = []
    seeds: list[Rule] = []
    for rel, consts in roots.items():
        if rel in restricted:
            head = Atom(PREFIX + rel, tuple(Const(consts[p]) for p in restricted[rel]))
            # a seed is a rule with a true comparison as its body (an IDB relation cannot have facts)
            seeds.append(Rule(f"{PREFIX}seed@{rel}", head, (Comparison("=", Const(0), Const(0)),), None))
    for r in program.rules:
        rel = r.head.relation
        if rel not in needed:
            continue
        if rel not in restricted:
            rules.append(r)
            continue
        b = restricted[rel]
        guard = Atom(PREFIX + rel, tuple(r.head.args[p] for p in b))
        rules.append(dataclasses.replace(r, body=(guard,) + r.body))
        known = {t for t in guard.args if isinstance(t, Var)}
        before: list[Atom] = []
        for n, i in enumerate(_sips(r, known)):
            a: Atom = r.body[i]  # type: ignore[assignment]
            if a.relation in restricted:
                args = tuple(a.args[p] for p in restricted[a.relation])
                bound_vars = known | {v for x in before for v in x.vars()}
                comps = [c for c in r.comparisons if all(v in bound_vars for v in c.vars())]
                body = (guard, *before, *comps)
                rules.append(Rule(f"{PREFIX}{r.name}@{n}", Atom(PREFIX + a.relation, args), body, None))
            before.append(a)
    demand_types = {PREFIX + rel: tuple(types[rel][p] for p in ps) for rel, ps in restricted.items()}
    kept = len([r for r in program.rules if r.head.relation in needed])
    # declarations of dropped relations would make them look like (empty) inputs
    used = {a.relation for r in rules for a in [r.head, *r.body] if isinstance(a, Atom)}
    decls = tuple(d for d in program.decls if d.relation in used or d.relation not in idb)
    out = dataclasses.replace(program, rules=tuple(seeds + rules), decls=decls)
    return Demand(out, restricted, demand_types, len(program.rules) - kept)


def _close_full(full: set[str], by_head: dict[str, list[Rule]], idb: set[str]) -> set[str]:
    """Everything a fully computed relation reads is computed in full too."""
    out = set(full)
    stack = list(full)
    while stack:
        rel = stack.pop()
        for r in by_head.get(rel, []):
            for b in r.body:
                if isinstance(b, Atom) and b.relation in idb and b.relation not in out:
                    out.add(b.relation)
                    stack.append(b.relation)
    return out
