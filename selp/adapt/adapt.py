"""Recompute a program's instances after the program changes, reusing the old ones ([GI12]).

The engine holds the old instance: every EDB relation ``S`` (old data), pending data changes
``S@delta`` (Z-relations), every IDB relation of the old program, and optionally one provenance
table ``m@prov`` per old rule ``m`` (all its body variables, no projection). The new program
reads primed relations: ``S@new = S + S@delta`` and ``q@new`` for its views. Views are planned
in dependency order; each chosen plan is run and materialised as ``q@new`` before the next view
is planned, and joins the available views (with its definition over base relations, which is
what folding matches). :func:`commit` then makes ``@new`` the current instance.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from selp.adapt.cost import query_cost
from selp.adapt.rewrite import TooLarge, unfold
from selp.adapt.rules import Query, make_cq, query_key, query_of_rules
from selp.adapt.search import Plan, search, view_relations
from selp.adapt.zprogram import Stats, View, ZEngine, check, lower
from selp.language.ast import Atom, Const, Program, Rule, Var

NEW, DELTA, PROV = "@new", "@delta", "@prov"


@dataclass(frozen=True)
class ViewPlan:
    """One adapted relation: its name in the new program, the plan that computed it, and the
    wall time spent on it: ``seconds`` in all (statistics, plan search, execution) and
    ``run_seconds`` executing the plan alone."""

    relation: str
    arity: int
    plan: Plan
    seconds: float = 0.0
    run_seconds: float = 0.0


def provenance_rule(r: Rule) -> Rule:
    """``m@prov(X1..Xk) :- body`` for rule ``m``: every body variable kept, in first-occurrence order."""
    seen: dict[Var, None] = {}
    for a in r.positive_atoms:
        for v in a.vars():
            seen.setdefault(v, None)
    return Rule(r.name + PROV, Atom(r.name + PROV, tuple(seen)), r.body, named=False)


def materialise(engine: ZEngine, program: Program, provenance: bool) -> None:
    """Evaluate ``program`` over the EDB relations already stored (its views replace what was
    stored under their names), with its provenance tables when ``provenance``."""
    arities, views = check(program)
    for v in views:
        engine.define(v.relation, v.arity, [lower(r, arities) for r in v.rules])
    for name in [n for n in engine.names() if n.endswith(PROV)]:
        engine.drop(name)
    if provenance:
        for r in program.rules:
            p = provenance_rule(r)
            engine.define(p.head.relation, p.head.arity, [lower(p, arities, 1)])
    _checkpoint(engine)


def _checkpoint(engine: ZEngine) -> None:
    """The engine's storage maintenance, when it has any (DuckDB's checkpoint, which
    :class:`selp.adapt.zduck.DuckZ` does not run automatically so that it never lands inside
    one view's statement): after a whole instance is written, outside any view's timing."""
    checkpoint = getattr(engine, "checkpoint", None)
    if checkpoint is not None:
        checkpoint()


class _Stats:
    """Engine statistics, each relation asked once per adaptation (refreshed when redefined)."""

    def __init__(self, engine: ZEngine) -> None:
        self.engine = engine
        self.cache: dict[str, Stats] = {}

    def __call__(self, name: str) -> Stats:
        if name not in self.cache:
            self.cache[name] = self.engine.stats(name) if self.engine.has(name) else Stats(0, ())
        return self.cache[name]


def _derived_stats(q: Query, stats: Callable[[str], Stats]) -> Stats | None:
    """The statistics of a relation computed by ``q`` when ``q`` only renames, reorders or adds
    constant columns to one stored relation (a changed source ``r′ :- r``, a copy): its input's,
    column by column, as a DBMS's optimiser estimates them — rather than a scan of every column
    of the new table; None for any other plan (the engine is asked when a later plan needs them)."""
    if len(q) != 1:
        return None
    ((cq, k),) = q.items()
    if k != 1 or len(cq.body) != 1 or cq.unequal:
        return None
    rel, args = cq.body[0]
    if not all(isinstance(t, Var) for t in args) or len(set(args)) != len(args):
        return None  # a selection or a repeated variable: fewer rows than the input
    source = stats(rel)
    column = {t: c for c, t in enumerate(args)}
    distinct = []
    for t in cq.head:
        if isinstance(t, Var):
            distinct.append(source.distinct[column[t]] if column[t] < len(source.distinct) else source.rows)
        elif isinstance(t, Const):
            distinct.append(min(1, source.rows))
        else:
            return None
    return Stats(source.rows, tuple(distinct))


def _reads(rules: list[Rule] | tuple[Rule, ...], names: set[str]) -> bool:
    """Whether a body atom of ``rules`` is of a relation in ``names``."""
    return any(isinstance(b, Atom) and b.relation in names for r in rules for b in r.body)


def _base_defs(program: Program, views: list[View]) -> tuple[dict[str, Query], set[str]]:
    """Each view's definition over base relations, but for the views whose unfolding is too
    large (:class:`TooLarge`) and those reading them: those are returned apart, opaque -- no
    folding target, and a view of the new program reading one is recomputed."""
    defs: dict[str, Query] = {}
    opaque: set[str] = set()
    for v in views:
        if _reads(v.rules, opaque):
            opaque.add(v.relation)
            continue
        try:
            defs[v.relation] = unfold(query_of_rules(v.rules), defs)
        except TooLarge:
            opaque.add(v.relation)
    return defs, opaque


def _primed(r: Rule, idb: set[str], edb_new: Callable[[str], str]) -> Rule:
    def rename(rel: str) -> str:
        return rel + NEW if rel in idb else edb_new(rel)

    body = tuple(Atom(rename(b.relation), b.args, b.negated, b.loc) if isinstance(b, Atom) else b for b in r.body)
    return Rule(r.name, Atom(rename(r.head.relation), r.head.args, r.head.negated, r.head.loc), body, r.weight, r.named, r.loc)


def adapt(engine: ZEngine, old: Program, new: Program, provenance: bool = True, budget: float | None = None, strategy: str = "adapt") -> list[ViewPlan]:
    """Compute ``q@new`` for every view of ``new`` (and ``m@prov@new`` for its rules when
    ``provenance``), planning each against the old instance; ``strategy="recompute"`` runs the
    input plans. Returns the plans in execution order."""
    old_arities, old_views = check(old)
    new_arities, new_views = check(new)
    stats = _Stats(engine)
    shared = bool(getattr(engine, "shares_copies", False))  # a kept relation costs nothing to copy
    old_defs, old_opaque = _base_defs(old, old_views)
    available: dict[str, Query] = {v: d for v, d in old_defs.items() if engine.has(v)}
    # arity of each old relation: two empty definitions have one key whatever their arity
    old_arity: dict[str, int] = {v.relation: v.arity for v in old_views}
    # per old relation, the old relations of its own (its instance, its rules' provenance
    # tables): where a plan keeping the old instance finds its remainder (the search's dive)
    own: dict[str, tuple[str, ...]] = {v.relation: (v.relation,) + tuple(r.name + PROV for r in v.rules) for v in old_views}
    if provenance:
        for r in old.rules:
            p = provenance_rule(r)
            if engine.has(p.head.relation) and not _reads([p], old_opaque):
                try:
                    available[p.head.relation] = unfold(query_of_rules([p]), old_defs)
                except TooLarge:
                    continue
                old_arity[p.head.relation] = p.head.arity
                own[p.head.relation] = (p.head.relation,)
    view_rels = {name: view_relations(d) for name, d in available.items()}  # kept, not recomputed per search
    idb = {v.relation for v in new_views}
    edb_defs: dict[str, Query] = {}
    for rel, arity in new_arities.items():
        if rel in idb:
            continue
        xs = tuple(Var(f"x{i}") for i in range(arity))
        q: Query = {make_cq(xs, [(rel, xs)]): 1}
        if engine.has(rel + DELTA):
            q[make_cq(xs, [(rel + DELTA, xs)])] = 1
        edb_defs[rel + NEW] = q
        if not engine.has(rel):
            engine.put(rel, arity, {})
    new_defs: dict[str, Query] = {}
    opaque: set[str] = set()  # new views whose unfolding is too large, and those reading them: recomputed
    arities = {**old_arities, **{k + NEW: a for k, a in new_arities.items()}}
    out: list[ViewPlan] = []
    jobs = [(v.relation + NEW, v.arity, list(v.rules)) for v in new_views]
    if provenance:
        jobs += [(provenance_rule(r).head.relation + NEW, provenance_rule(r).head.arity, [provenance_rule(r)]) for r in new.rules]
    for name, arity, rules in jobs:
        start = time.perf_counter()
        primed = [_primed(r, idb, lambda s: s + NEW) for r in rules]
        primed = [Rule(name, Atom(name, r.head.args, r.head.negated), r.body, named=False) for r in primed]
        original = unfold(query_of_rules(primed), edb_defs)
        base: Query | None = None
        if not _reads(primed, opaque):
            try:
                base = unfold(original, new_defs)
            except TooLarge:
                pass
        previous = name[: -len(NEW)]
        if base is None:
            # its unfolding over base relations is too large to search: recomputed (and no
            # folding target for the views after it)
            opaque.add(name)
            cost = query_cost(original, stats, shared)
            plan = Plan(original, cost, cost, 0, 0.0)
        elif strategy == "recompute":
            cost = query_cost(original, stats, shared)
            plan = Plan(original, cost, cost, 0, 0.0)
        elif previous in available and old_arity.get(previous) == arity and query_key(available[previous]) == query_key(base):
            # an unchanged definition over unchanged data: the old instance is the answer, no search
            xs = tuple(Var(f"x{i}") for i in range(arity))
            copy: Query = {make_cq(xs, [(previous, xs)]): 1}
            plan = Plan(copy, query_cost(copy, stats, shared), query_cost(original, stats, shared), 0, 0.0)
        else:
            plan = search(original, base, available, stats, budget, first=own.get(previous, (previous,)), view_rels=view_rels, shared_copies=shared)
        lowered = [lower(cq.rule(name, k), arities, k) for cq, k in plan.query.items()]
        run = time.perf_counter()
        engine.define(name, arity, lowered)
        done = time.perf_counter()
        stats.cache.pop(name, None)
        derived = _derived_stats(plan.query, stats)
        if derived is not None:
            stats.cache[name] = derived
        if base is not None:
            new_defs[name] = base
            available[name] = base
            view_rels[name] = view_relations(base)
        out.append(ViewPlan(name, arity, plan, done - start, done - run))
    return out


def commit(engine: ZEngine, old: Program, new: Program, provenance: bool = True) -> None:
    """Make the adapted instance current: ``S := S + S@delta`` for the EDB, ``q := q@new`` for
    the views (old views that the new program drops are forgotten), provenance tables likewise."""
    old_arities, old_views = check(old)
    new_arities, new_views = check(new)
    idb = {v.relation for v in new_views}
    # every pending delta is applied, read by the new program or not
    for rel in [n[: -len(DELTA)] for n in engine.names() if n.endswith(DELTA)]:
        if rel not in idb and engine.has(rel):
            arity = len(engine.stats(rel).distinct)
            xs = tuple(Var(f"x{i}") for i in range(arity))
            rules = [Rule("c", Atom(rel + NEW, xs), (Atom(rel, xs),)), Rule("d", Atom(rel + NEW, xs), (Atom(rel + DELTA, xs),))]
            engine.define(rel + NEW, arity, [lower(r, {}) for r in rules])
            engine.rename(rel + NEW, rel)
            engine.drop(rel + DELTA)
    for v in old_views:
        if v.relation not in idb:
            engine.drop(v.relation)
    for r in old.rules:
        engine.drop(r.name + PROV)
    for v in new_views:
        engine.rename(v.relation + NEW, v.relation)
    if provenance:
        for r in new.rules:
            name = provenance_rule(r).head.relation
            engine.rename(name + NEW, name)
    _checkpoint(engine)
