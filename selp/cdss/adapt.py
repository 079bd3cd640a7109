"""Adapt a CDSS's instances after its mappings change, instead of recomputing them ([GI12]).

``selp cdss exchange --strategy adapt`` and ``selp cdss plan``. The old instance is the latest
exchange epoch, read with the compiled program it was computed from (each epoch keeps its
program text, :data:`PROGRAM_FILE`); the new program is the one compiled from ``cdss.toml`` now,
and the new base data are the published edit logs (so mapping and data changes go together).

The compiled programs are not all in the counting fragment of :mod:`selp.adapt`: ``t_R`` reads
``not R_r`` (rejections), trust conditions order values (``nam >= 3``) and cyclic mappings make
``R_o``, ``P_m`` and ``R_t`` recursive. So the new program is evaluated component by component:

* a component that is recursive, or whose rules negate a body atom or use an ordering
  comparison or arithmetic, is **opaque**: recomputed under set semantics by a selp engine from
  the new instances of what it reads (the paper does the same for recursion). Its new instance
  ``q@new`` then serves later views like base data: ``q@new = q + q@delta``, with the delta
  computed against the old instance, so a mapping over it can still fold into its old ``P_m``;
* every other view is **adapted**: planned by :func:`selp.adapt.search.search` against the old
  views and evaluated over Z-relations (counts of derivations; visible = positive).

The store keeps sets, not counts. The only old views offered for folding are those whose stored
set *is* their Z-relation: one rule whose head keeps every body variable (so each tuple has one
derivation, count 1) over relations that are base data or opaque in the new program: exactly
the provenance tables ``P_m`` of the compiled programs. ``R_i`` and ``R_t`` have several
derivations per tuple; their counts would have to be recomputed from ``P_m``, which costs what
recomputing them from ``P_m@new`` costs, so they are not offered.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from selp.adapt.cost import query_cost
from selp.adapt.rewrite import unfold
from selp.adapt.rules import Query, make_cq, query_of_rules
from selp.adapt.search import Plan, search
from selp.adapt.zprogram import Stats, ZEngine, from_text, lower, to_text, visible
from selp.language.ast import Aggregate, Arith, Atom, Comparison, Program, Rule, SkolemTerm, Var
from selp.language.validate import Component, analyze
from selp.values import Value

NEW, DELTA = "@new", "@delta"
PROGRAM_FILE = "program.dl"  # in each epoch directory: the compiled program it was computed from
Row = tuple[Value, ...]
Say = Callable[[str], None]


@dataclass(frozen=True)
class ViewStep:
    """How one relation of the new program was computed.

    ``how`` is ``adapt`` (``plan`` holds the rewritten rules) or ``recompute`` (an opaque
    component, ``reason`` says why); costs are the estimates of :mod:`selp.adapt.cost`."""

    relation: str
    how: str
    reason: str
    cost: float
    recompute_cost: float
    plan: Plan | None
    seconds: float

    def rules(self) -> list[str]:
        """The plan's rules as text (``x2`` after a rule counted twice); none when recomputed."""
        from selp.language.printer import format_rule

        if self.plan is None:
            return []
        items = sorted(self.plan.query.items(), key=lambda x: x[0].key)
        return [format_rule(cq.rule(self.relation + NEW, k)) + (f"  x{abs(k)}" if abs(k) > 1 else "") for cq, k in items]

    def as_json(self) -> dict[str, Any]:
        """The step for ``selp cdss plan --format json``."""
        return {
            "relation": self.relation,
            "how": self.how,
            "reason": self.reason,
            "cost": round(self.cost, 1),
            "recompute_cost": round(self.recompute_cost, 1),
            "rules": self.rules(),
        }


@dataclass
class Adaptation:
    """The new instance (every relation of the new program, as sets) and the steps taken."""

    state: dict[str, set[Row]]
    steps: list[ViewStep]


def opaque_reason(component: Component) -> str:
    """Why ``component`` cannot be adapted over Z-relations ('' when it can)."""
    if component.recursive:
        return "recursive"
    for r in component.rules:
        for b in r.body:
            if isinstance(b, Atom) and b.negated:
                return f"negation (not {b.relation})"
            if isinstance(b, Comparison) and b.op not in ("=", "!="):
                return f"ordering comparison ({b.op})"
            if isinstance(b, Comparison) and _computed(b):
                return "arithmetic"
        if any(isinstance(t, (Arith, Aggregate)) for t in r.head.args):
            return "arithmetic or aggregate"
    return ""


def _computed(c: Comparison) -> bool:
    return any(isinstance(t, (Arith, Aggregate)) for t in (c.left, c.right))


def _foldable(r: Rule) -> bool:
    """Whether the stored set of ``r``'s head relation is its Z-relation: each tuple has exactly
    one derivation because the head keeps every body variable as a plain argument."""
    head = {t for t in r.head.args if isinstance(t, Var)}
    return all(v in head for a in r.positive_atoms for v in a.vars()) and not any(isinstance(t, SkolemTerm) for t in r.head.args)


def _renamed(r: Rule, name: str, rename: Callable[[str], str]) -> Rule:
    body = tuple(Atom(rename(b.relation), b.args, b.negated, b.loc) if isinstance(b, Atom) else b for b in r.body)
    return Rule(name, Atom(name, r.head.args, r.head.negated), body, named=False)


def _ones(rows: set[Row]) -> dict:
    return to_text({r: 1 for r in rows})


def adapt_instances(
    old: Program,
    old_state: Mapping[str, set[Row]],
    new: Program,
    base: Mapping[str, set[Row]],
    z: ZEngine,
    evaluate: Callable[[Any, dict[str, set[Row]]], dict[str, set[Row]]],
    budget: float | None = None,
    say: Say = lambda msg: None,
) -> Adaptation:
    """The instance of ``new`` over the base data ``base``, adapted from ``old``'s instance
    ``old_state`` (every relation of ``old``) on the Z-relation store ``z`` (empty);
    ``evaluate(analysis, facts)`` computes an opaque component under set semantics."""
    old_an, new_an = analyze(old), analyze(new)
    arities: dict[str, int] = dict(old_an.arities)
    for rel, arity in old_an.arities.items():
        z.put(rel, arity, _ones(old_state.get(rel, set())))
    same = lambda rel: old_an.arities.get(rel) == new_an.arities[rel]  # noqa: E731 - an old instance to diff against
    stats_cache: dict[str, Stats] = {}

    def stats(name: str) -> Stats:
        if name not in stats_cache:
            stats_cache[name] = z.stats(name) if z.has(name) else Stats(0, ())
        return stats_cache[name]

    defs: dict[str, Query] = {}  # q@new -> its definition over old relations and deltas

    def as_base(rel: str, rows: set[Row]) -> None:
        """Store ``rel@new`` (count 1 per tuple) and, when there is an old instance, its delta."""
        arity = new_an.arities[rel]
        z.put(rel + NEW, arity, _ones(rows))
        arities[rel + NEW] = arity
        if same(rel):
            xs = tuple(Var(f"x{i}") for i in range(arity))
            diff = [Rule("d", Atom(rel + DELTA, xs), (Atom(rel + NEW, xs),)), Rule("d", Atom(rel + DELTA, xs, True), (Atom(rel, xs),))]
            z.define(rel + DELTA, arity, [lower(r, arities) for r in diff])
            arities[rel + DELTA] = arity
            # an unchanged relation's new instance is its old one: no delta joins to plan
            changed = z.stats(rel + DELTA).rows > 0
            cqs = [make_cq(xs, [(rel, xs)])] + ([make_cq(xs, [(rel + DELTA, xs)])] if changed else [])
            defs[rel + NEW] = {cq: 1 for cq in cqs if cq is not None}

    for rel in sorted(new_an.edb):
        as_base(rel, set(base.get(rel, set())))
    opaque = {c.relations: opaque_reason(c) for c in new_an.components}
    bases = set(new_an.edb) | {rel for c, why in opaque.items() if why for rel in c}
    available: dict[str, Query] = {}
    for comp in old_an.components:
        if len(comp.rules) == 1 and not opaque_reason(comp) and _foldable(comp.rules[0]):
            r = comp.rules[0]
            if all(a.relation in bases and same(a.relation) for a in r.positive_atoms):
                available[r.head.relation] = query_of_rules([r])

    steps: list[ViewStep] = []
    state: dict[str, set[Row]] = {rel: set(base.get(rel, set())) for rel in new_an.edb}
    for comp in new_an.components:
        t0 = time.perf_counter()
        why = opaque[comp.relations]
        inputs = sorted({a.relation for r in comp.rules for a in r.positive_atoms + r.negative_atoms if a.relation not in comp.relations})
        if why:
            facts = {rel: state[rel] for rel in inputs}
            sub = Program(tuple(d for d in new.decls if d.relation in set(inputs) | set(comp.relations)), comp.rules, ())
            out = evaluate(analyze(sub), facts)
            read = float(sum(stats(rel + NEW).rows for rel in inputs))
            for rel in comp.relations:
                state[rel] = set(out.get(rel, set()))
                as_base(rel, state[rel])
                steps.append(ViewStep(rel, "recompute", why, read, read, None, time.perf_counter() - t0))
                say(f"{rel}: recomputed ({why})")
            continue
        (rel,) = comp.relations
        name = rel + NEW
        original = query_of_rules([_renamed(r, name, lambda s: s + NEW) for r in comp.rules])
        unfolded = unfold(original, defs)
        for cq in list(original) + list(unfolded):  # statistics first: the budget is for the search
            for r, _ in cq.body:
                stats(r)
        for view in available:
            stats(view)
        # the input plan reads q@new, which no old view is defined over: the search starts from
        # the unfolding, and recomputation stays the candidate it is compared with
        plan = search(unfolded, unfolded, available, stats, budget)
        recompute = query_cost(original, stats)
        if plan.cost >= recompute:
            plan = Plan(original, recompute, recompute, plan.explored, plan.seconds)
        else:
            plan = Plan(plan.query, plan.cost, recompute, plan.explored, plan.seconds)
        arity = new_an.arities[rel]
        z.define(name, arity, [lower(cq.rule(name, k), arities, k) for cq, k in plan.query.items()])
        arities[name] = arity
        stats_cache.pop(name, None)
        defs[name] = unfolded
        available[name] = unfolded
        state[rel] = set(visible(from_text(z.get(name))))
        steps.append(ViewStep(rel, "adapt", "", plan.cost, plan.recompute_cost, plan, time.perf_counter() - t0))
        say(f"{rel}: adapted, estimated cost {plan.cost:.0f} vs recomputation {plan.recompute_cost:.0f}")
    return Adaptation(state, steps)


def read_program(epoch_dir: Path) -> Program | None:
    """The compiled program an epoch was computed from (None for epochs written before epochs
    kept it)."""
    from selp.language.parser import parse_program

    path = epoch_dir / PROGRAM_FILE
    if not path.is_file():
        return None
    return parse_program(path.read_text(encoding="utf-8"), str(path))


def _old_state(store: Any, epoch: int, old: Program) -> dict[str, set[Row]]:
    """Every relation of ``old`` as stored in ``epoch`` (read with ``old``'s declarations: a
    provenance table of an edited mapping has its old columns)."""
    from selp.cdss.store import read_relation

    directory = store.epoch_dir(epoch)
    return {d.relation: read_relation(directory, d.relation, tuple(t for _, t in d.columns)) for d in old.decls}


def adapt_store(store: Any, base: Mapping[str, set[Row]], eng: Any, spark: Any = None, budget: float | None = None, say: Say = lambda msg: None) -> tuple[Adaptation | None, str]:
    """The adaptation of the store's latest epoch to its current ``cdss.toml`` and base data
    ``base`` (``R_x`` included) on engine ``eng``, written nowhere; ``(None, why)`` when there
    is nothing to adapt from."""
    start = store.last_exchange()
    if start is None:
        return None, "no earlier exchange to adapt from"
    old = read_program(store.epoch_dir(start.epoch))
    if old is None:
        return None, f"epoch {start.epoch} was written without its program (by an older selp)"
    say(f"adapting epoch {start.epoch} (publication {start.publication}) to the current mappings")
    old_state = _old_state(store, start.epoch, old)
    z = eng.counting(spark)  # the Z-relations on the exchange's engine (its session on Spark)
    try:
        return adapt_instances(old, old_state, store.compiled.program, base, z, lambda an, facts: eng.evaluate(an, facts, spark=spark), budget, say), ""
    finally:  # the result is in Python sets: release the store (Spark's cached frames outlive it otherwise)
        for name in z.names():
            z.drop(name)


def plan_exchange(store: Any, eng: Any, spark: Any = None, say: Say = lambda msg: None) -> tuple[Adaptation | None, str]:
    """What ``--strategy adapt`` would do at the next exchange (``selp cdss plan``): the
    adaptation computed in memory, the store left unchanged."""
    from selp.cdss.recompute import add_threshold_rejections

    base = store.base_data(store.last_publication())
    add_threshold_rejections(eng, store.compiled, base, spark)
    return adapt_store(store, base, eng, spark, say=say)
