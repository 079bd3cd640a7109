"""The incremental maintenance of update exchange (:class:`Maintainer`), over any :class:`Backend`.

Given the full state of a compiled program (every EDB and IDB relation, e.g. from
:func:`selp.cdss.evaluate.evaluate_cdss`) and changes to its EDB relations (``R_l`` local
contributions added/removed, ``R_r`` rejections added/removed),
:func:`selp.cdss.incremental.apply_changes` returns the state that full recomputation would give,
doing as little work as the chosen strategy allows:

``recompute``
    Evaluate from scratch with one of selp's engines (``engine``, one of
    :mod:`selp.engines.registry`; the embedded engine by default): the baseline. The tests'
    oracle is the reference engine.
``dred``
    Delete and rederive ([GMS93]): over-delete every tuple
    with a derivation that used a removed tuple, re-derive those that still have a derivation from
    what is left, then insert.
``provenance``
    The PropagateDelete of [Kar09] ch. 5 (Fig. 5.2) with derivability testing (goal-directed inverse rules over the provenance),
    then incremental insertion with delta rules (§3.2).

**Changes and strata.** The new EDB is ``(old - deletes) | inserts`` (a tuple in both ends up
present). Components of the program are maintained in dependency order; each sees the exact
changes ``Δ+``/``Δ-`` of every relation below it. Deletion comes first: it computes the
*intermediate* state, where positive atoms over lower relations read ``old - Δ-`` and negated atoms
read ``old | Δ+`` -- so a new rejection in ``R_r`` *kills* the ``t_R`` instance of ``R_o``, exactly
as a removed ``R_l`` tuple kills the ``l_R`` instance. Insertion then goes from the intermediate
state to the new one (positive atoms read ``new``, i.e. ``Δ+`` drives; negated atoms lose ``Δ-``,
so a removed rejection drives the ``t_R`` rule). Both steps are monotone, which is what makes each
of them exact.

**PropagateDelete, as implemented** (our reading of [Kar09]'s Fig. 5.2, whose pseudocode contradicts its text):

1. *Killed instances*: every rule instance of the old state that used a deleted tuple (or whose
   negated atom now holds) is dead; its head is *affected*. A ``P_m`` row is an instance of its
   rule by itself (``P_m`` keeps all body variables), so a provenance row dies exactly when one of
   its body tuples is deleted.
2. Per round, each affected tuple is looked up goal-directedly (its rules with the head bound):
   with a remaining instance that reads only lower relations (``l_R`` over ``R_l``, a
   non-recursive rule) it is still derivable; with no remaining instance at all it is deleted at
   once; otherwise (it keeps provenance rows only through its own component: a cycle, m3/m4) it
   goes to the derivability test.
3. *Derivability test* (§3.3): walk the remaining provenance backwards from the tuples to test
   (the inverse rules ``P'_m :- R', P_m``), stopping at tuples that are grounded -- with an
   instance over lower relations only, or already proven; then re-derive forwards, goal-directed,
   from the grounded tuples over the explored subgraph only. Every explored tuple the forward pass
   does not reach is deleted: it is not derivable from the base data (tuples on a cycle that only
   support each other). The test is exact, so a tuple it proves is never tested again.
4. The newly deleted tuples kill further instances (step 1 within the component) and the rounds
   repeat until nothing is affected. The test's own fixpoint is nested inside a round and is not
   part of the outer termination check ([Kar09] ch. 5).

**Components without recursion** (every component of an acyclic CDSS) are maintained in one
step, the same for both strategies (:meth:`Maintainer.nonrecursive`): the heads of killed
instances that keep an instance over the new lower relations stay (DRed's re-derivation and
PropagateDelete's "still has provenance" coincide there), the others go, and the delta rules add
the new heads. Components are grouped into *levels* (a level reads only lower levels) and each
level's deltas are sized together: one Spark job per level.

**What it requires of a program.** Any stratified selp program works (the maintenance is generic
over rules; weights are ignored, it is set semantics). What makes the provenance strategy cheap is
the CDSS shape: every rule either keeps all its body variables in its head (``P_m``, ``t_R``,
``l_R``: the instance *is* the head tuple) or has a one-atom body over such a relation (``R_i``,
``R_t`` from ``P_m``). Then "does this tuple still have an instance" and "which tuples does it come
from" are key look-ups; for a rule that projects a join away they are goal-directed joins, still
correct but dearer.

The algorithm is written once (:class:`Maintainer`) over a small relational interface
(:class:`Backend`): Python sets in :mod:`selp.cdss.incremental`, Spark DataFrames in
:mod:`selp.cdss.incremental_spark`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Protocol

from selp.language.ast import Atom, Rule, Var
from selp.language.validate import Analysis, Component

STRATEGIES = ("provenance", "dred", "recompute")
NEG = "#neg"  # negated atoms read their relation under this suffix: the intermediate state differs
GOAL = "__goal#"  # the goal atom of a goal-directed rule (head variables bound)
INST = "__inst#"  # the head of an instance rule: head values, then the recursive body facts


# -- rules prepared for maintenance ---------------------------------------------------------------
@dataclass(frozen=True)
class PreparedRule:
    """A rule of the program with the variants the maintenance evaluates.

    ``rule`` has negated atoms renamed to ``REL#neg`` and anonymous variables of positive atoms
    named (so instance rules can return them). ``lower_pos``/``lower_neg`` are (body index,
    relation) of atoms over relations below the rule's component, ``rec`` those over it.
    """

    rule: Rule
    head: str
    lower_pos: tuple[tuple[int, str], ...]
    lower_neg: tuple[tuple[int, str], ...]
    rec: tuple[tuple[int, str], ...]
    goal_rule: Rule | None  # goal atom (plain head variables) first, then the body
    goal_positions: tuple[int, ...]  # head positions the goal atom binds (first occurrences)
    inst_rule: Rule | None  # goal rule whose head also lists the recursive atoms' arguments
    inst_slices: tuple[tuple[str, tuple[int, ...]], ...]  # per recursive atom: its columns

    def positive_at(self, i: int) -> Rule:
        """The rule with negated atom ``i`` read positively (to drive it by a delta), the negation
        itself kept at the end: with ``_`` in the atom, one fact entering or leaving the delta does
        not decide it (``not e(x, _)`` needs *no* fact ``e(x, *)`` in the state read)."""
        body = list(self.rule.body)
        a: Atom = body[i]  # type: ignore[assignment]
        body[i] = Atom(a.relation, a.args, False)
        # the kept negation's own local variables stay its own (not r(x, y, y) still means "no y")
        local = {v: Var(f"{v.name}#neg") for v in self.rule.negation_locals(a) if not v.anonymous}
        body.append(Atom(a.relation, tuple(local.get(t, t) if isinstance(t, Var) else t for t in a.args), True))
        return Rule(self.rule.name + "#pos", self.rule.head, tuple(body), None)


def _rewrite(rule: Rule) -> Rule:
    body: list = []
    k = 0
    for b in rule.body:
        if isinstance(b, Atom) and b.negated:
            body.append(Atom(b.relation + NEG, b.args, True))
        elif isinstance(b, Atom):
            args = []
            for t in b.args:
                if isinstance(t, Var) and t.anonymous:
                    args.append(Var(f"anon#{k}"))
                    k += 1
                else:
                    args.append(t)
            body.append(Atom(b.relation, tuple(args)))
        else:
            body.append(b)
    return Rule(rule.name, rule.head, tuple(body), None)


def prepare_rule(rule: Rule, component: frozenset[str]) -> PreparedRule:
    """Classify a rule's atoms against its component and build its goal/instance variants."""
    r = _rewrite(rule)
    lower_pos, lower_neg, rec = [], [], []
    for i, b in enumerate(r.body):
        if not isinstance(b, Atom):
            continue
        if b.negated:
            lower_neg.append((i, b.relation[: -len(NEG)]))
        elif b.relation in component:
            rec.append((i, b.relation))
        else:
            lower_pos.append((i, b.relation))
    plain: dict[Var, int] = {}
    for p, t in enumerate(r.head.args):
        if isinstance(t, Var):
            plain.setdefault(t, p)
    goal_rule = inst_rule = None
    slices: list[tuple[str, tuple[int, ...]]] = []
    if plain:
        goal = Atom(GOAL + r.name, tuple(plain))
        goal_rule = Rule(r.name + "#goal", r.head, (goal,) + r.body, None)
    if rec:
        args = list(r.head.args)
        for i, rel in rec:
            a: Atom = r.body[i]  # type: ignore[assignment]
            slices.append((rel, tuple(range(len(args), len(args) + a.arity))))
            args.extend(a.args)
        body = goal_rule.body if goal_rule else r.body
        inst_rule = Rule(r.name + "#inst", Atom(INST + r.name, tuple(args)), body, None)
    return PreparedRule(
        r,
        r.head.relation,
        tuple(lower_pos),
        tuple(lower_neg),
        tuple(rec),
        goal_rule,
        tuple(plain.values()),
        inst_rule,
        tuple(slices),
    )


# -- the relational interface ---------------------------------------------------------------------
class Backend(Protocol):
    """Set operations and rule evaluation over opaque relation values (immutable sets of tuples).

    ``eval(rule, delta_atom, full, delta)`` returns the distinct head tuples of ``rule``: body atom
    ``delta_atom`` reads ``delta[relation]``, every other atom (negated ones included) reads
    ``full[relation]``.
    """

    def empty(self, arity: int) -> Any: ...
    def size(self, r: Any) -> int: ...
    def sizes(self, rs: list[Any]) -> list[int]: ...  # several at once (Spark: one job)
    def keep(self, r: Any) -> Any: ...  # computed at most once from here on (Spark: lazy checkpoint)
    def union(self, a: Any, b: Any) -> Any: ...
    def minus(self, a: Any, b: Any) -> Any: ...
    def semijoin(self, a: Any, positions: tuple[int, ...], b: Any) -> Any: ...
    def project(self, a: Any, positions: tuple[int, ...]) -> Any: ...
    def eval(self, rule: Rule, delta_atom: int | None, full: Mapping[str, Any], delta: Mapping[str, Any]) -> Any: ...


@dataclass
class Stats:
    """What one maintenance did (see :func:`selp.cdss.incremental.apply_changes` for the keys of its dict form)."""

    strategy: str
    seconds: float = 0.0
    inserted: dict[str, int] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)
    derivability_tests: int = 0
    rederived: int = 0
    overdeleted: int = 0
    killed: int = 0
    rounds: int = 0
    components: int = 0  # components that had changes below them

    def as_dict(self) -> dict:
        return {
            "strategy": self.strategy,
            "seconds": self.seconds,
            "inserted": dict(self.inserted),
            "deleted": dict(self.deleted),
            "derivability_tests": self.derivability_tests,
            "rederived": self.rederived,
            "overdeleted": self.overdeleted,
            "killed": self.killed,
            "rounds": self.rounds,
            "components": self.components,
        }


Env = dict[str, Any]


class Maintainer:
    """Incremental maintenance of a program's fixpoint under EDB changes, over a :class:`Backend`."""

    def __init__(self, analysis: Analysis, backend: Backend) -> None:
        self.analysis = analysis
        self.b = backend
        self.components: list[tuple[Component, list[PreparedRule]]] = []
        for comp in analysis.components:
            members = frozenset(comp.relations)
            self.components.append((comp, [prepare_rule(r, members) for r in comp.rules]))
        # levels: a component comes one level above the highest component it reads, so the
        # components of a level are independent and their deltas are sized together (Spark: one
        # job per level instead of two per relation)
        level_of: dict[str, int] = {}
        self.levels: list[list[tuple[Component, list[PreparedRule]]]] = []
        for comp, rules in self.components:
            below = [level_of[rel] for p in rules for _, rel in p.lower_pos + p.lower_neg if rel in level_of]
            lv = 1 + max(below, default=-1)
            for rel in comp.relations:
                level_of[rel] = lv
            while len(self.levels) <= lv:
                self.levels.append([])
            self.levels[lv].append((comp, rules))

    def arity(self, rel: str) -> int:
        return self.analysis.arities[rel]

    def nonempty(self, r: Any) -> bool:
        return r is not None and self.b.size(r) > 0

    # -- entry point -----------------------------------------------------------------------------
    def run(self, old: dict[str, Any], inserts: dict[str, Any], deletes: dict[str, Any], strategy: str) -> tuple[dict[str, Any], Stats]:
        """``old``: every relation; ``inserts``/``deletes``: EDB relations. Returns (new, stats)."""
        if strategy not in ("provenance", "dred"):
            raise ValueError(f"unknown strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")
        t0 = time.perf_counter()
        stats = Stats(strategy)
        b = self.b
        new: dict[str, Any] = {}
        dplus: dict[str, Any] = {}
        dminus: dict[str, Any] = {}
        edb_changes: list[tuple[str, Any, Any]] = []
        for rel in self.analysis.edb:
            o = old[rel]
            plus = b.minus(inserts[rel], o) if rel in inserts else None
            minus = b.semijoin(b.minus(deletes[rel], inserts[rel]) if rel in inserts else deletes[rel], tuple(range(self.arity(rel))), o) if rel in deletes else None
            edb_changes.append((rel, plus, minus))
        b.sizes([r for _, plus, minus in edb_changes for r in (plus, minus) if r is not None])
        for rel, plus, minus in edb_changes:
            n = old[rel]
            if self.nonempty(minus):
                dminus[rel] = minus
                n = b.minus(n, minus)
            if self.nonempty(plus):
                dplus[rel] = plus
                n = b.union(n, plus)
            new[rel] = n
        for level in self.levels:
            done: list[tuple[str, Any, Any, Any]] = []  # (relation, new value, plus, minus) of this level
            counted: list[tuple[str, Any]] = []  # statistics sized with the level's deltas
            for comp, rules in level:
                touched = any(rel in dplus or rel in dminus for p in rules for _, rel in p.lower_pos + p.lower_neg)
                if not touched:
                    for rel in comp.relations:
                        new[rel] = old[rel]
                    continue
                stats.components += 1
                if not any(p.rec for p in rules):
                    res, changes = self.nonrecursive(comp, rules, old, new, dplus, dminus, strategy, counted)
                else:
                    mid = self.delete_phase(comp, rules, old, dplus, dminus, strategy, stats)
                    res = self.insert_phase(comp, rules, mid, new, dplus, dminus)
                    changes = {rel: (b.minus(res[rel], old[rel]), b.minus(old[rel], res[rel])) for rel in comp.relations}
                for rel in comp.relations:
                    new[rel] = res[rel]
                    done.append((rel, res[rel], *changes[rel]))
            # one batch: every delta of the level, the new values (materialised: lineage cut),
            # and the statistics the non-recursive components counted
            b.sizes([r for _, n, plus, minus in done for r in (plus, minus, n)] + [r for _, r in counted])
            for rel, _, plus, minus in done:
                if self.nonempty(plus):
                    dplus[rel] = plus
                if self.nonempty(minus):
                    dminus[rel] = minus
            for what, r in counted:
                setattr(stats, what, getattr(stats, what) + b.size(r))
        for rel, r in dplus.items():
            stats.inserted[rel] = b.size(r)
        for rel, r in dminus.items():
            stats.deleted[rel] = b.size(r)
        stats.seconds = time.perf_counter() - t0
        return new, stats

    # -- environments ----------------------------------------------------------------------------
    def lower_env(self, rules: list[PreparedRule], pos: Callable[[str], Any], neg: Callable[[str], Any]) -> Env:
        env: Env = {}
        for p in rules:
            for _, rel in p.lower_pos:
                env[rel] = pos(rel)
            for _, rel in p.lower_neg:
                env[rel + NEG] = neg(rel)
        return env

    # -- rule evaluation helpers -----------------------------------------------------------------
    def heads_with_instance(self, p: PreparedRule, goal: Any, env: Env) -> Any:
        """The tuples of ``goal`` (head tuples of ``p``) that have an instance of ``p`` in ``env``:
        the rule evaluated with its head bound (magic-set style goal atom)."""
        b = self.b
        if p.goal_rule is None:
            heads = b.eval(p.rule, None, env, {})
        else:
            g = b.project(goal, p.goal_positions)
            heads = b.eval(p.goal_rule, 0, env, {p.goal_rule.body[0].relation: g})  # type: ignore[union-attr]
        return b.semijoin(heads, tuple(range(self.arity(p.head))), goal) if heads is not None else None

    def body_facts(self, p: PreparedRule, goal: Any, env: Env) -> Iterator[tuple[str, Any]]:
        """(relation, facts) of the recursive body atoms of the instances of ``p`` whose head is in
        ``goal``: one step of the inverse rules ``P'_m :- R', P_m`` ([Kar09] ch. 5, derivation testing)."""
        b = self.b
        assert p.inst_rule is not None
        if p.goal_rule is None:
            rows = b.eval(p.inst_rule, None, env, {})
        else:
            g = b.project(goal, p.goal_positions)
            rows = b.eval(p.inst_rule, 0, env, {p.goal_rule.body[0].relation: g})  # type: ignore[union-attr]
        rows = b.semijoin(rows, tuple(range(self.arity(p.head))), goal)
        for rel, cols in p.inst_slices:
            yield rel, b.project(rows, cols)

    def collect(self, out: dict[str, Any], rel: str, r: Any) -> None:
        out[rel] = self.b.union(out[rel], r) if rel in out else r

    def closure(self, rules: list[PreparedRule], cur: dict[str, Any], delta: dict[str, Any], lower: Env, restrict: dict[str, Any] | None = None) -> dict[str, Any]:
        """Semi-naive fixpoint of the recursive rules from ``cur`` with new facts ``delta`` (not in
        ``cur``); heads outside ``restrict`` (when given) are dropped. Returns the grown ``cur``."""
        b = self.b
        cur = dict(cur)
        while any(n > 0 for n in b.sizes(list(delta.values()))):
            for rel, d in delta.items():
                cur[rel] = b.union(cur[rel], d)
            b.sizes([cur[rel] for rel in delta])  # materialise (Spark: cuts the lineage every round)
            env = {**lower, **cur}
            new: dict[str, Any] = {}
            for p in rules:
                for i, rel in p.rec:
                    d = delta.get(rel)
                    if self.nonempty(d):
                        self.collect(new, p.head, b.eval(p.rule, i, env, {rel: d}))
            delta = {}
            for rel, n in new.items():
                n = b.minus(n, cur[rel])
                if restrict is not None:
                    n = b.semijoin(n, tuple(range(self.arity(rel))), restrict[rel])
                delta[rel] = n
        return cur

    # -- a component without recursion ---------------------------------------------------------
    def nonrecursive(self, comp, rules, old, new, dplus, dminus, strategy: str, counted: list) -> tuple[dict[str, Any], dict[str, tuple[Any, Any]]]:
        """A component whose rules read only lower relations, in one step and without sizing
        anything: a head of a killed old instance stays when some rule still has an instance of
        it over the new lower relations (for DRed: the over-deleted tuple is re-derived), else it
        goes; every instance over the new relations that uses an inserted tuple (or whose negated
        atom lost one) adds its head. Instances that are neither killed nor new are unchanged, so
        this is exact. Returns (new values, (plus, minus) per relation); statistics to size are
        appended to ``counted``."""
        b = self.b
        members = comp.relations
        env_old = {**self.lower_env(rules, lambda r: old[r], lambda r: old[r]), **{r: old[r] for r in members}}
        env_new = self.lower_env(rules, lambda r: new[r], lambda r: new[r])
        killed = self.killed(rules, env_old, dplus, dminus)
        added = self.lower_delta_heads(rules, env_new, dplus, dminus)
        res: dict[str, Any] = {}
        changes: dict[str, tuple[Any, Any]] = {}
        for rel in members:
            # kept: read by the new value, the deltas and the statistics of one counting job
            k = b.keep(killed[rel]) if rel in killed else None
            gone = None
            if k is not None:
                stay = None
                for p in rules:
                    if p.head == rel:
                        h = self.heads_with_instance(p, k, env_new)
                        stay = h if stay is None else b.union(stay, h)
                if stay is not None:
                    stay = b.keep(stay)
                gone = b.keep(b.minus(k, stay)) if stay is not None else k
                counted.append(("killed", k))
                if strategy == "dred":
                    counted.append(("overdeleted", k))
                    if stay is not None:
                        counted.append(("rederived", stay))
            plus = b.keep(b.minus(added[rel], old[rel])) if rel in added else b.empty(self.arity(rel))
            minus = gone if gone is not None else b.empty(self.arity(rel))
            res[rel] = b.union(b.minus(old[rel], minus), plus)
            changes[rel] = (plus, minus)
        return res, changes

    # -- deletion --------------------------------------------------------------------------------
    def killed(self, rules: list[PreparedRule], env_old: Env, dplus: dict[str, Any], dminus: dict[str, Any]) -> dict[str, Any]:
        """Heads of the old instances that a lower change kills ([Kar09] ch. 5: deletion delta
        rules over pre-state values)."""
        return self.lower_delta_heads(rules, env_old, dminus, dplus)

    def lower_delta_heads(self, rules: list[PreparedRule], env: Env, pos: dict[str, Any], neg: dict[str, Any]) -> dict[str, Any]:
        """Heads of the rule instances over ``env`` that use a tuple of ``pos`` in a positive
        lower atom, or whose negated lower atom matches a tuple of ``neg`` (checked positively):
        the delta rules driven by changes below the component, for deletion and insertion."""
        b = self.b
        out: dict[str, Any] = {}
        for p in rules:
            for i, rel in p.lower_pos:
                if rel in pos:
                    self.collect(out, p.head, b.eval(p.rule, i, env, {rel: pos[rel]}))
            for i, rel in p.lower_neg:
                if rel in neg:
                    self.collect(out, p.head, b.eval(p.positive_at(i), i, env, {rel + NEG: neg[rel]}))
        return out

    def delete_phase(
        self,
        comp: Component,
        rules: list[PreparedRule],
        old: dict[str, Any],
        dplus: dict[str, Any],
        dminus: dict[str, Any],
        strategy: str,
        stats: Stats,
    ) -> dict[str, Any]:
        """The component's relations in the intermediate state (lower deletions applied)."""
        b = self.b
        members = comp.relations
        env_old = {**self.lower_env(rules, lambda r: old[r], lambda r: old[r]), **{r: old[r] for r in members}}
        mid_lower = self.lower_env(
            rules,
            lambda r: b.minus(old[r], dminus[r]) if r in dminus else old[r],
            lambda r: b.union(old[r], dplus[r]) if r in dplus else old[r],
        )
        seeds = {rel: s for rel, s in self.killed(rules, env_old, dplus, dminus).items() if self.nonempty(s)}
        stats.killed += sum(b.size(s) for s in seeds.values())
        if not seeds:
            return {r: old[r] for r in members}
        if strategy == "dred":
            return self.dred_delete(comp, rules, old, env_old, mid_lower, seeds, stats)
        return self.propagate_delete(comp, rules, old, env_old, mid_lower, seeds, stats)

    def dred_delete(self, comp, rules, old, env_old, mid_lower, seeds, stats: Stats) -> dict[str, Any]:
        """Over-delete everything an affected tuple derived (old state), then re-derive."""
        b = self.b
        members = comp.relations
        rec = [p for p in rules if p.rec]
        over = {r: seeds.get(r, b.empty(self.arity(r))) for r in members}
        delta = dict(seeds)
        while delta:
            new: dict[str, Any] = {}
            for p in rec:
                for i, rel in p.rec:
                    if rel in delta:
                        self.collect(new, p.head, b.eval(p.rule, i, env_old, {rel: delta[rel]}))
            delta = {}
            for rel, n in new.items():
                n = b.minus(n, over[rel])
                if self.nonempty(n):
                    delta[rel] = n
                    over[rel] = b.union(over[rel], n)
                    b.size(over[rel])
            stats.rounds += 1
        stats.overdeleted += sum(b.size(o) for o in over.values())
        cur = {r: b.minus(old[r], over[r]) for r in members}
        env = {**mid_lower, **cur}
        again: dict[str, Any] = {}
        for p in rules:
            if self.nonempty(over[p.head]):
                self.collect(again, p.head, self.heads_with_instance(p, over[p.head], env))
        again = {r: b.minus(a, cur[r]) for r, a in again.items()}
        res = self.closure(rec, cur, again, mid_lower)
        stats.rederived += sum(b.size(b.minus(res[r], cur[r])) for r in members)
        return res

    def propagate_delete(self, comp, rules, old, env_old, mid_lower, seeds, stats: Stats) -> dict[str, Any]:
        """PropagateDelete with derivability testing (module docstring; [Kar09] ch. 5)."""
        b = self.b
        members = comp.relations
        base = [p for p in rules if not p.rec]
        rec = [p for p in rules if p.rec]
        empty = {r: b.empty(self.arity(r)) for r in members}
        proven = dict(empty)  # exactly derivable in the intermediate state: never tested again
        cur = {r: old[r] for r in members}
        affected = seeds
        while affected:
            stats.rounds += 1
            # not yet deleted (affected tuples are old ones, so: still current), not yet proven
            affected = {r: b.minus(b.semijoin(a, tuple(range(self.arity(r))), cur[r]), proven[r]) for r, a in affected.items()}
            env = {**mid_lower, **cur}
            has_base: dict[str, Any] = {}
            for p in base:
                if p.head in affected:
                    self.collect(has_base, p.head, self.heads_with_instance(p, affected[p.head], env))
            rest = {r: b.minus(a, has_base[r]) if r in has_base else a for r, a in affected.items()}
            for r, h in has_base.items():
                proven[r] = b.union(proven[r], h)
                b.size(proven[r])
            has_rec: dict[str, Any] = {}
            for p in rec:
                if p.head in rest and self.nonempty(rest[p.head]):
                    self.collect(has_rec, p.head, self.heads_with_instance(p, rest[p.head], env))
            newly = {r: b.minus(a, has_rec[r]) if r in has_rec else a for r, a in rest.items()}
            for r, n in newly.items():
                cur[r] = b.minus(cur[r], n)
                b.size(cur[r])
            chk = {r: h for r, h in has_rec.items() if self.nonempty(h)}
            if chk:
                stats.derivability_tests += sum(b.size(h) for h in chk.values())
                derivable, explored = self.derivation_test(members, base, rec, chk, {**mid_lower, **cur}, mid_lower, proven)
                for r in members:
                    stats.rederived += b.size(b.semijoin(derivable[r], tuple(range(self.arity(r))), chk[r])) if r in chk else 0
                    bad = b.minus(explored[r], derivable[r])
                    proven[r] = b.union(proven[r], derivable[r])
                    b.size(proven[r])
                    if self.nonempty(bad):
                        cur[r] = b.minus(cur[r], bad)
                        b.size(cur[r])
                        self.collect(newly, r, bad)
            newly = {r: n for r, n in newly.items() if self.nonempty(n)}
            affected = {}
            for p in rec:
                for i, rel in p.rec:
                    if rel in newly:
                        self.collect(affected, p.head, b.eval(p.rule, i, env_old, {rel: newly[rel]}))
            affected = {r: a for r, a in affected.items() if self.nonempty(a)}
        return cur

    def derivation_test(self, members, base, rec, chk, env, mid_lower, proven) -> tuple[dict[str, Any], dict[str, Any]]:
        """Which tuples of ``chk`` (and of everything they come from) are derivable from the
        base data: backwards through the remaining provenance to grounded tuples, then forwards
        from those over the explored subgraph only ([Kar09] ch. 5, derivation testing).
        Returns (derivable, explored) per relation, derivable ⊆ explored."""
        b = self.b
        empty = {r: b.empty(self.arity(r)) for r in members}
        explored = {**empty, **chk}
        frontier = dict(chk)
        grounded = dict(empty)
        while frontier:
            expand: dict[str, Any] = {}
            for r, f in frontier.items():
                full = tuple(range(self.arity(r)))
                g = b.semijoin(f, full, proven[r])
                rest = b.minus(f, g)
                for p in base:
                    if p.head == r and self.nonempty(rest):
                        found = self.heads_with_instance(p, rest, env)
                        g = b.union(g, found)
                        rest = b.minus(rest, found)
                grounded[r] = b.union(grounded[r], g)
                b.size(grounded[r])
                if self.nonempty(rest):
                    expand[r] = rest
            new: dict[str, Any] = {}
            for p in rec:
                if p.head in expand:
                    for rel, facts in self.body_facts(p, expand[p.head], env):
                        self.collect(new, rel, facts)
            frontier = {}
            for r, n in new.items():
                n = b.minus(n, explored[r])
                if self.nonempty(n):
                    frontier[r] = n
                    explored[r] = b.union(explored[r], n)
                    b.size(explored[r])
        # forward: the grounded tuples are derivable; what else follows inside the explored part
        delta = {r: g for r, g in grounded.items() if self.nonempty(g)}
        derivable = self.closure(rec, empty, delta, mid_lower, restrict=explored)
        return derivable, explored

    # -- insertion -------------------------------------------------------------------------------
    def insert_phase(self, comp, rules, mid, new, dplus, dminus) -> dict[str, Any]:
        """Insertion delta rules ([Kar09] ch. 5, after [GMS93]) from the intermediate state to the new one."""
        b = self.b
        members = comp.relations
        lower = self.lower_env(rules, lambda r: new[r], lambda r: new[r])
        env = {**lower, **mid}
        seeds = self.lower_delta_heads(rules, env, dplus, dminus)
        delta = {r: b.minus(s, mid[r]) for r, s in seeds.items()}
        return self.closure([p for p in rules if p.rec], {r: mid[r] for r in members}, delta, lower)


def check_changes(analysis: Analysis, inserts: Mapping[str, Any], deletes: Mapping[str, Any]) -> None:
    """Changes may only name EDB relations of the program (``ValueError`` otherwise)."""
    for what, changes in (("inserts", inserts), ("deletes", deletes)):
        for rel in changes:
            if rel not in analysis.edb:
                kind = "a derived relation" if rel in analysis.idb else "not a relation of the program"
                raise ValueError(f"{what} names {rel}, {kind}; only base relations change ({', '.join(sorted(analysis.edb))})")
