"""The ``absorption`` strategy: recursive views maintained with absorption provenance [LTZIL10].

Every base tuple is a Boolean variable; every derived tuple carries the minimal positive formula
(:mod:`selp.maintain.formula`) of its derivations. Insertion propagates only derivations the
formula does not absorb -- which is what makes the fixpoint end on cycles, where a tuple has
infinitely many derivations but finitely many minimal ones. Deletion restricts the deleted
tuples' variables to false in every formula: a tuple whose formula becomes false is gone, every
other one is still derivable. Nothing is over-deleted and nothing re-derived, and tuples on a
cycle cannot keep each other alive because formulas mention base variables only. In positive
components a deletion only *decides* (each formula evaluated with the deleted variables false);
the restriction itself waits: an insertion restricts only the stored formulas it reads as
derivation inputs (:meth:`_fresh`), compares the rest modulo the pending deleted variables, and
each batch restricts a bounded number of stale formulas in the background (:meth:`_compact`).

The components of the program (:func:`selp.maintain.program.kind`) are maintained in evaluation
order, each batch at once:

* ``positive`` -- formulas as above.
* ``selective`` (min/max through recursion) -- the paper's AggSel with a *reserve*: every
  candidate of a group is kept with its formula, the group's fact is the best candidate whose
  formula is not false, and only a group's new best (or new monomials of it) propagates. When the
  best is deleted, the next candidate of the reserve takes over and propagates. Inside the
  component a fact's formula is the disjunction of its best candidates' formulas, over base
  variables, so a deletion restricts candidates exactly as it restricts any tuple. With several
  aggregates (Multi AggSel) the group's fact takes each aggregate's best over the candidates and
  its formula is the conjunction, over the aggregates, of the disjunction of the candidates
  reaching that aggregate's value. This is
  exact when the aggregated value is monotone along the recursion (a path's cost only grows
  when it is extended, as in shortest paths): the best value of a group is then the best over
  its derivations, and a candidate kept in reserve is a derivation that still exists.
* ``aggregate`` (count/sum/min/max, not recursive) -- every rule instance is kept with its
  formula; a group's value is folded over the instances whose formula is not false.
* ``recompute`` (negation) -- recomputed from its inputs when one changed.

The facts of the last three kinds are not monotone in the base (a count changes, a best is
improved upon), so each such fact gets a variable of its own, like a base tuple: the
components above read it through that variable, and when the fact is replaced or goes away its
variable is restricted to false in the components above -- exactly, as for a base deletion.

Transitive closures (:mod:`selp.maintain.closure`) are built by elimination and hold new edges
unexpanded (:meth:`Absorption._closure`); their formulas are then sound but may lack paths, and
a deletion gives back the tuples it killed that the live graph still connects
(:meth:`Absorption._repair`).

A formula past the cap raises :class:`~selp.maintain.formula.Blowup` (BDDs: the manager's live
nodes, read every few hundred operations, :meth:`~selp.maintain.algebra.Bdds.tick`); the session
falls back to DRed (:mod:`selp.maintain.session`).
"""

from __future__ import annotations

import random
from typing import Any, Callable, Iterable, Mapping

from selp import aggregate
from selp.engines.joins import BodyPlan
from selp.engines.local import FactStore
from selp.language.ast import Rule
from selp.language.validate import Analysis, Component
from selp.maintain import formula as pb
from selp.maintain.algebra import ALGEBRAS, Bdds
from selp.maintain.base import Maintainer, present_changes
from selp.maintain.closure import Closure, closure_shape, edge_formulas, eliminate, insert_edge
from selp.maintain.order import dfs_order
from selp.maintain.program import INIT, Fact, ViewChanges, evaluate_component, inputs, kind, positive_positions

Formula = Any  # of the maintainer's algebra (selp.maintain.algebra)
# deleted variables whose restriction may wait. An unrestricted formula holds no more nodes than
# it did before the deletion, and one restriction of many variables costs what one of a single
# variable does (a pass over the BDD), so waiting long is cheap; the cap bounds the pending set
# carried in the state and the work a later insertion finds waiting
DEFAULT_PENDING_CAP = 1024
# stale formulas restricted at the end of every batch (background compaction). Small: at 396
# links a BDD restriction is ~0.3 ms of CPU and a deletion leaves ~600 formulas stale, so 64 a
# batch took a deletion from 7 to 132 ms of CPU (loaded) without keeping up; the stale set is
# harmless (insertions restrict what they read) and pending_cap bounds it
DEFAULT_COMPACT = 8
Delta = dict[str, dict[Fact, Formula]]  # relation -> tuple -> what its formula gained in this batch
_EMPTY = FactStore()


class Absorption(Maintainer):
    """A view maintained with absorption provenance (see the module docstring)."""

    strategy = "absorption"
    work = 0  # derivations formed (the unit DRed's ``work`` counts too)
    touched = 0  # stored formulas a deletion's restriction changed

    def __init__(self, analysis: Analysis, base: Mapping[str, Iterable[Fact]], cap: int = pb.DEFAULT_CAP, formulas: str = "monomials",
                 order: str = "dfs", node_cap: int = pb.DEFAULT_NODE_CAP, build: str = "eliminate",
                 pending_cap: int = DEFAULT_PENDING_CAP, compact: int = DEFAULT_COMPACT, lazy: bool = True,
                 repair: bool = True) -> None:
        super().__init__(analysis)
        # absorbed edges of transitive closures held unexpanded (see _closure, _unabsorbed):
        # closure relation -> edge -> the formula its tuples gained, not yet in any tuple's
        # formula; lazy=False expands every new edge into the closure at once
        self.lazy = lazy
        self.lazy_edges: dict[str, dict[tuple, Formula]] = {}
        # new edges that connected new pairs: those pairs got their formulas, the paths through
        # the edge between pairs already connected wait (expanded at the next deletion that
        # kills a tuple, see _unabsorbed)
        self.partial_edges: dict[str, dict[tuple, Formula]] = {}
        self.folded = 0  # lazily held edges expanded later (a deletion cut their endpoints apart)
        # repair=True: held and waiting edges are never expanded by a deletion; the tuples a
        # deletion kills that the live graph still connects get a formula of their own instead
        # (see _repair). The closures whose formulas may then lack paths: a deletion there
        # always checks what it killed
        self.repair = repair
        self.incomplete: set[str] = set()
        self.repaired = 0  # tuples a deletion killed and _repair gave back
        # deletion by evaluation, restriction deferred (see _kill, _fresh, _compact, settle):
        # the variables deleted since the stale set was last empty, and per positive relation
        # the tuples whose stored formula may still mention one; each restricted when an
        # insertion reads it, by the background compaction (compact a batch), or all at once
        # when more than pending_cap variables wait (0: after every deletion)
        self.pending: set[int] = set()
        self.stale: dict[str, set[Fact]] = {}
        self.pending_cap = pending_cap
        self.compact = compact
        self.settled = 0  # formulas restricted later than their deletion (the deferred part)
        self._cache_kill: tuple[int, Any] = (-1, None)  # (len(pending), alg.killer(pending))
        # transitive-closure components: by elimination (selp.maintain.closure), or by
        # semi-naive rounds like every other component ("rounds", to compare)
        self.build = build
        self.cap = cap
        self.node_cap = node_cap
        self.alg = Bdds(cap, node_cap) if formulas == "bdd" else ALGEBRAS[formulas](cap)
        self.order = order  # of the first batch's variables: depth-first over the base, or as given
        self.aggregated = analysis.program.aggregated()
        self.kinds = [kind(c, self.aggregated) for c in analysis.components]
        # the formula of every tuple readable by the components above its own
        self.formulas: dict[str, dict[Fact, Formula]] = {rel: {} for rel in analysis.arities}
        self.var_of: dict[tuple[str, Fact], int] = {}  # base tuples and non-monotone facts
        self.next_var = 0
        self.stores_filled = False  # the first batch also fires the rules without body atoms
        self.arrival: list[tuple[str, Fact]] = []  # base variables in arrival order (for orders)
        # per selective/aggregate component: its candidates (or instances) with their formulas
        self.candidates: dict[str, dict[Any, tuple[Fact, Formula]]] = {}
        self.groups: dict[str, dict[Fact, set[Any]]] = {}
        self.internal: dict[str, dict[Fact, Formula]] = {}  # selective: formulas inside the component
        self.internal_stores: dict[str, FactStore] = {}
        for comp, k in zip(analysis.components, self.kinds):
            if k in ("selective", "aggregate"):
                for rel in comp.relations:
                    self.candidates[rel], self.groups[rel] = {}, {}
                    if k == "selective":
                        self.internal[rel], self.internal_stores[rel] = {}, FactStore()
        self._cache_plans: dict[tuple[Rule, int | None], tuple[BodyPlan, Callable, list]] = {}
        # BDDs: variable -> the tuples of a positive relation whose formula may mention it (a
        # superset: restriction only shrinks supports), built at the first deletion, and the
        # tuples whose formula changed since (their supports are read at the next deletion)
        self._cache_support: dict[str, dict[int, set[Fact]]] = {}
        self._cache_dirty: dict[str, set[Fact]] = {}
        self._cache_shapes: dict[tuple[str, ...], Closure | None] = {}
        self.apply({rel: base.get(rel, ()) for rel in analysis.edb}, {})  # the build
        self.index_supports()

    def index_supports(self) -> None:
        """Build the variable -> tuples index of every formula now, with the view (else the
        first deletion builds it: at 396 links, the supports of 10,000 BDDs of ~1,500 nodes).
        Kept up to date by later batches; rebuilt at the first deletion after loading a state."""
        for comp, k in zip(self.analysis.components, self.kinds):
            for rel in comp.relations:
                if k == "positive":
                    self._mentioning(rel, set())
                elif k in ("selective", "aggregate"):
                    self._mentioning(rel, set(), self._reserve(rel), self.candidates[rel], lambda c: c[1])

    # -- variables ---------------------------------------------------------------------------
    def _new_var(self, rel: str, fact: Fact) -> int:
        v = self.next_var
        self.next_var += 1
        self.var_of[(rel, fact)] = v
        if rel in self.analysis.edb:
            self.arrival.append((rel, fact))
        return v

    def _add_fact(self, rel: str, fact: Fact, delta: Delta, changes: ViewChanges) -> None:
        """A tuple with a variable of its own enters ``rel`` (a base tuple, or a non-monotone fact)."""
        form = self.alg.var(self._new_var(rel, fact))
        self.formulas[rel][fact] = form
        self.stores[rel].add_all((fact,))
        delta.setdefault(rel, {})[fact] = form
        if rel in self.analysis.idb:
            changes.add(rel, fact)

    def _drop_fact(self, rel: str, fact: Fact, changes: ViewChanges) -> int:
        """A tuple with a variable of its own leaves ``rel``; returns the variable."""
        v = self.var_of.pop((rel, fact))
        del self.formulas[rel][fact]
        self.stores[rel].discard_all((fact,))
        if rel in self.analysis.idb:
            changes.remove(rel, fact)
        return v

    # -- one batch ---------------------------------------------------------------------------
    def apply(self, inserts: Mapping[str, Iterable[Fact]], deletes: Mapping[str, Iterable[Fact]]) -> ViewChanges:
        """Apply one batch; the view's changes. Past a cap, :class:`~selp.maintain.formula.Blowup`
        (the session falls back to DRed; the state is then not to be used), also when a BDD
        operation fails at CUDD's memory limit (:meth:`~selp.maintain.algebra.Bdds.failed`)."""
        try:
            return self._batch(inserts, deletes)
        except ValueError as err:
            blowup = self.alg.failed(err)
            if blowup is None:
                raise
        # raised outside the handler: the failed operation's traceback (frames holding BDDs) is
        # then freed by reference counting, BDDs before their manager -- in a garbage cycle the
        # manager could go first and report the BDDs still referenced
        raise blowup

    def _batch(self, inserts: Mapping[str, Iterable[Fact]], deletes: Mapping[str, Iterable[Fact]]) -> ViewChanges:
        ins, dels = present_changes(self.stores, inserts, deletes)
        self._cache_inserted = ins  # the batch's new base tuples (see _repair)
        changes = ViewChanges()
        delta: Delta = {} if self.stores_filled else {INIT: {(): self.alg.true()}}
        first = not self.stores_filled
        self.stores_filled = True
        killed: set[int] = set()
        changed: set[str] = set()
        for rel, fs in dels.items():
            for f in fs:
                killed.add(self._drop_fact(rel, f, changes))
            changed.add(rel)
        for rel, f in self._arrange(ins, first):
            self._add_fact(rel, f, delta, changes)
            changed.add(rel)
        for comp, k in zip(self.analysis.components, self.kinds):
            if k == "positive":
                self._positive(comp, killed, delta, changed, changes)
            elif k == "selective":
                self._selective(comp, killed, delta, changed, changes)
            elif k == "aggregate":
                self._aggregate(comp, killed, delta, changed, changes)
            elif inputs(comp) & changed:
                self._recompute(comp, killed, delta, changed, changes)
        if len(self.pending) > self.pending_cap:
            self.settle()
        else:
            self._compact(self.compact)
        return changes

    def _arrange(self, ins: Mapping[str, set[Fact]], first: bool) -> list[tuple[str, Fact]]:
        """The inserted tuples in the order their variables are numbered: the first batch in
        depth-first order of the graph its binary base relations form (the order that keeps
        BDDs small [LTZIL10]), shuffled (``random``, an arrival order) or sorted; later ones as
        sorted (appended to the order)."""
        listed = [(rel, f) for rel in sorted(ins) for f in sorted(ins[rel], key=repr)]
        if first and self.order == "random":  # a random arrival order, to compare with DFS
            random.Random(0).shuffle(listed)
        return dfs_order(listed) if first and self.order == "dfs" else listed

    # -- shared pieces -----------------------------------------------------------------------
    def _plan(self, rule: Rule, driver: int | None) -> tuple[BodyPlan, Callable, list]:
        key = (rule, driver)
        got = self._cache_plans.get(key)
        if got is None:
            plan = BodyPlan(rule, driver)
            atoms = [(i, rule.body[i].relation, plan.atom_builder(i)) for i in positive_positions(rule)]  # type: ignore[union-attr]
            got = self._cache_plans[key] = (plan, plan.head_builder(), atoms)
        return got

    def _mentioning(self, rel: str, killed: set[int], key: str | None = None, table: Mapping[Any, Any] | None = None,
                    form_of: Callable[[Any], Formula] = lambda x: x) -> list[Any]:
        """The tuples of ``rel`` whose formula may mention a ``killed`` variable, through the
        support index: a link is on the paths of a fraction of the tuples, and testing every
        formula is a Python step per tuple (for a BDD, as dear as restricting it). With ``key``,
        ``table`` and ``form_of``: the entries of another table (a reserve of candidates)."""
        key = rel if key is None else key
        table = self.formulas[rel] if table is None else table
        index = self._cache_support.get(key)
        if index is None:
            index = self._cache_support[key] = {}
            self._cache_dirty[key] = set(table)
        dirty = self._cache_dirty[key]
        for f in dirty:
            got = table.get(f)
            if got is not None:
                for v in self.alg.support(form_of(got)):
                    index.setdefault(v, set()).add(f)
        dirty.clear()
        out: set[Any] = set()
        for v in killed:
            out |= index.pop(v, set())  # a killed variable never comes back
        return [f for f in out if f in table]

    def _changed(self, rel: str, fact: Fact) -> None:
        """``fact``'s formula in ``rel`` grew: its support is re-read at the next deletion."""
        dirty = self._cache_dirty.get(rel)
        if dirty is not None:
            dirty.add(fact)

    def _kill(self, rel: str, mentioning: list[Fact], valuation: Any) -> list[Fact]:
        """Decide which tuples of positive ``rel`` whose formula mentions a deleted variable are
        gone: those false under ``valuation`` (every pending variable false, the others true;
        a stored formula is monotone, so that is "false once restricted"). Nothing is
        restricted: the survivors become stale until :meth:`settle`. Returns the gone tuples,
        removed from the table."""
        table = self.formulas[rel]
        alive = self.alg.alive
        gone = [f for f in mentioning if not alive(table[f], valuation)]
        stale = self.stale.setdefault(rel, set())
        stale.update(mentioning)
        stale.difference_update(gone)
        self.touched += len(mentioning)
        for f in gone:
            del table[f]
        return gone

    def settle(self) -> None:
        """Restrict the pending deleted variables to false in every stale formula, so that every
        stored formula is exact again (what eager restriction would have left). Runs before any
        insertion is combined with stored formulas -- a comparison of an unrestricted formula
        (``old | new == old``) could see a gain that restriction removes -- and when the pending
        set passes ``pending_cap``."""
        if not self.pending:
            return
        for rel, facts in self.stale.items():
            for f in list(facts):
                self._fresh(rel, f)
        self._clear_pending()

    def _clear_pending(self) -> None:
        """No stored formula mentions a pending variable any more: forget them (and the
        restriction argument built for them)."""
        self.stale.clear()
        self.pending.clear()
        self._cache_kill = (-1, None)

    def _killer(self) -> Any:
        """The pending variables as the algebra's restriction argument, built once per size of
        the pending set (it only grows until it is cleared)."""
        n, kill = self._cache_kill
        if n != len(self.pending):
            self._cache_kill = n, kill = len(self.pending), self.alg.killer(self.pending)
        return kill

    def _fresh(self, rel: str, fact: Fact) -> Formula:
        """``fact``'s formula in positive ``rel``, restricted first if it is stale: what an
        insertion reads as a derivation's input, so that every formula it builds is free of
        pending variables (the invariant :meth:`_positive` relies on)."""
        table = self.formulas[rel]
        stale = self.stale.get(rel)
        if not stale or fact not in stale:
            return table[fact]
        stale.discard(fact)
        rest = self.alg.restrict(table[fact], self._killer())
        if rest is None:  # _kill decided it lives: a false one here is a bug, not data
            raise AssertionError(f"absorption: {rel}{fact} was kept by a deletion but its formula is false")
        table[fact] = rest
        self.settled += 1
        return rest

    def _is_stale(self, rel: str, fact: Fact) -> bool:
        stale = self.stale.get(rel)
        return stale is not None and fact in stale

    def _compact(self, budget: int) -> None:
        """Restrict up to ``budget`` stale formulas (the background compaction); when none is
        left, no stored formula mentions a pending variable and the pending set is emptied."""
        for rel, facts in self.stale.items():
            while facts and budget > 0:
                self._fresh(rel, next(iter(facts)))
                budget -= 1
        if not any(self.stale.values()):
            self._clear_pending()

    def _feeds(self, comp: Component, delta: Delta) -> bool:
        """Whether ``delta`` holds a change a rule of ``comp`` reads (so the component derives)."""
        return any(delta.get(rule.body[i].relation) for rule in comp.rules for i in positive_positions(rule))  # type: ignore[union-attr]

    def _derive(self, rules: Iterable[Rule], current: Delta, stores: Mapping[str, FactStore], forms: Mapping[str, Mapping[Fact, Formula]]) -> list[tuple[Rule, list, Fact, Formula]]:
        """Every derivation that uses a new monomial of ``current`` at one positive atom (the
        semi-naive variants): ``(rule, binding, head, its formula)``, collected before any is
        applied so no store changes while it is being scanned."""
        out = []
        negated = lambda rel, pattern, eqs=(): stores[rel].matches(pattern, eqs)  # noqa: E731
        for rule in rules:
            if INIT in current and not positive_positions(rule):  # a rule of constants: true once
                plan, head, _ = self._plan(rule, None)
                out.extend((rule, list(env), head(env), self.alg.true()) for env in plan.bindings(lambda *a: (), negated))
            for i in positive_positions(rule):
                d = current.get(rule.body[i].relation)  # type: ignore[union-attr]
                if not d:
                    continue
                plan, head, atoms = self._plan(rule, i)
                dstore = FactStore(d)

                def lookup(src: str, r: str, p: tuple[int, ...], k: tuple, dstore: FactStore = dstore) -> Iterable[Fact]:
                    return dstore.lookup(p, k) if src == "delta" else stores[r].lookup(p, k)

                for env in plan.bindings(lookup, negated):
                    parts = []
                    for j, rel, build in atoms:
                        fact = build(env)
                        parts.append(d[fact] if j == i else forms[rel][fact])
                    out.append((rule, list(env), head(env), self.alg.conj(parts)))
        self.work += len(out)
        return out

    # -- positive components ---------------------------------------------------------------
    def _positive(self, comp: Component, killed: set[int], delta: Delta, changed: set[str], changes: ViewChanges) -> None:
        members = comp.relations
        if killed:
            self.pending |= killed
            valuation = None
            died = False
            lost: dict[str, list[Fact]] = {}
            for rel in members:
                mentioning = self._mentioning(rel, killed)
                if not mentioning:
                    continue
                if valuation is None:  # built here: valid until a variable is declared
                    valuation = self.alg.valuation(self.pending)
                gone = self._kill(rel, mentioning, valuation)
                lost[rel] = gone
                if gone:
                    died = True
                    self.stores[rel].discard_all(gone)
                    for f in gone:
                        changes.remove(rel, f)
                    changed.add(rel)
        # no settle here: an insertion restricts only the stale formulas it reads as inputs
        # (_fresh), so every formula it builds is free of pending variables, and compares a
        # stale head unrestricted, which is exact (docs/maintain.md, "Restriction on read")
        shape = self._shape(comp)
        if shape is not None:
            if killed and (self.lazy_edges.get(shape.rel) or self.partial_edges.get(shape.rel) or shape.rel in self.incomplete):
                if self.repair:
                    self._repair(shape, lost.get(shape.rel, []), delta, changed, changes)
                else:
                    self._unabsorbed(shape, died, delta, changed, changes)
            self._closure(shape, delta, changed, changes)
            return
        current = {rel: d for rel, d in delta.items() if d}
        while current:
            # the round's derivations per head first, then one OR of the batch per head: the
            # formula algebra is paid once per head and round, not once per derivation
            batch: dict[tuple[str, Fact], list[Formula]] = {}
            for rule, _, head, new in self._derive(comp.rules, current, self.stores, _FreshTables(self)):
                batch.setdefault((rule.head.relation, head), []).append(new)
            fresh: Delta = {}
            for (rel, head), news in batch.items():
                table = self.formulas[rel]
                old = table.get(head)
                form, gained = self.alg.disj(old, news[0] if len(news) == 1 else self.alg.union(news), self._is_stale(rel, head))
                if gained is None:
                    continue
                table[head] = form
                self._changed(rel, head)
                if old is None:
                    self.stores[rel].add_all((head,))
                    changes.add(rel, head)
                    changed.add(rel)
                fresh.setdefault(rel, {})[head] = gained
            for rel, d in fresh.items():
                acc = delta.setdefault(rel, {})
                for f, g in d.items():
                    acc[f] = self.alg.disj(acc.get(f), g)[0]
            current = fresh  # only the component's own relations change now
            self.alg.check()

    def _shape(self, comp: Component) -> Closure | None:
        if self.build != "eliminate":
            return None
        if comp.relations not in self._cache_shapes:
            self._cache_shapes[comp.relations] = closure_shape(comp)
        return self._cache_shapes[comp.relations]

    def _closure(self, shape: Closure, delta: Delta, changed: set[str], changes: ViewChanges) -> None:
        """A transitive-closure component's insertions: the whole closure by elimination when
        it is empty (the first build), else each edge that gained, one at a time (see
        :mod:`selp.maintain.closure`: no formula is ever a length-bounded one)."""
        gained = delta.get(shape.edges)
        if not gained:
            return
        alg, rel = self.alg, shape.rel
        table = self.formulas[rel]
        if not table:  # no tuple yet, so no edge before this batch: every edge's whole formula
            edges = [(f, self._fresh(shape.edges, f)) for f in list(self.formulas[shape.edges])]
            made, work = eliminate(alg, edge_formulas(alg, edges, shape), alg.check)
            self.work += work
            for head, form in made.items():
                self._grown(rel, head, None, form, form, delta, changed, changes)
            return
        lazy = self._lazy_ok(shape)
        held = self.lazy_edges.setdefault(rel, {}) if lazy else {}
        for edge, g in edge_formulas(alg, gained.items(), shape).items():
            if lazy and edge in self.stores[rel].facts:
                # absorbed: its endpoints are connected already, so no tuple appears, and a
                # path through it can take the connection instead; its formula waits
                held[edge] = alg.disj(held.get(edge), g)[0]
                continue
            if lazy:
                self._connect(shape, edge, g, delta, changed, changes)
                continue
            self._expand(shape, edge, g, delta, changed, changes)

    def _connect(self, shape: Closure, edge: tuple, g: Formula, delta: Delta, changed: set[str], changes: ViewChanges) -> None:
        """A new edge that connects pairs not connected before: only those pairs get formulas now
        (``R*(i, a) ∧ g ∧ R*(b, j)``, sound), the paths through it between pairs already
        connected wait in :attr:`partial_edges`. Until they are expanded the formulas are not
        closed under composition (a path through the edge and a pair it connected is missing
        from the formula of a pair connected before), so no deletion may decide by them alone:
        the first deletion that kills a tuple expands the waiting edges first."""
        alg, rel = self.alg, shape.rel
        store = self.stores[rel]
        a, b = edge
        # the reflexive closure: a and b themselves with TRUE, whatever cycle they are on
        column: dict[Any, Fact | None] = {**{f[0]: f for f in store.lookup((1,), (a,))}, a: None}
        row: dict[Any, Fact | None] = {**{f[1]: f for f in store.lookup((0,), (b,))}, b: None}
        new: list[tuple[Fact, Formula]] = []
        for i, left in column.items():
            have = {f[1] for f in store.lookup((0,), (i,))}
            missing = [j for j in row if j not in have]
            if not missing:
                continue
            xg = alg.conj([g] if left is None else [self._fresh(rel, left), g])
            for j in missing:
                right = row[j]
                new.append(((i, j), xg if right is None else alg.conj([xg, self._fresh(rel, right)])))
                alg.tick()
        for head, form in new:
            self.work += 1
            self._grown(rel, head, None, form, form, delta, changed, changes)
        held = self.partial_edges.setdefault(rel, {})
        held[edge] = alg.disj(held.get(edge), g)[0]
        alg.check()

    def _expand(self, shape: Closure, edge: tuple, g: Formula, delta: Delta, changed: set[str], changes: ViewChanges) -> None:
        """OR into the closure the paths through ``edge`` (which gained ``g``): one conjunction
        per pair ``(i, j)`` with ``i`` reaching its source and its destination reaching ``j``."""
        alg, rel = self.alg, shape.rel
        table, store = self.formulas[rel], self.stores[rel]
        # the inputs restricted (a few hundred), the heads (up to the whole view) not
        column = [(f[0], self._fresh(rel, f)) for f in store.lookup((1,), (edge[0],))]
        row = [(f[1], self._fresh(rel, f)) for f in store.lookup((0,), (edge[1],))]
        for head, new in insert_edge(alg, edge, g, column, row):
            self.work += 1
            alg.tick(3)  # two conjunctions and a disjunction: the node cap within the expansion
            old = table.get(head)
            form, got = alg.disj(old, new, self._is_stale(rel, head))
            if got is not None:
                self._grown(rel, head, old, form, got, delta, changed, changes)
        alg.check()

    def _lazy_ok(self, shape: Closure) -> bool:
        """Whether new absorbed edges of ``shape`` may be held unexpanded: only when no rule of
        another component reads the closure, since such a rule would combine the closure's
        formulas, which lack the held paths, into formulas of its own."""
        if not self.lazy:
            return False
        key = ("lazy", shape.rel)
        if key not in self._cache_shapes:
            self._cache_shapes[key] = not any(  # type: ignore[assignment]
                lit.relation == shape.rel for comp in self.analysis.components if shape.rel not in comp.relations
                for rule in comp.rules for lit in rule.body if hasattr(lit, "relation"))
        return bool(self._cache_shapes[key])

    def _unabsorbed(self, shape: Closure, died: bool, delta: Delta, changed: set[str], changes: ViewChanges) -> None:
        """After a deletion: drop the held edges that are gone, and expand every held edge whose
        endpoints the deletion disconnected (its pair is no longer in the closure), until every
        held edge is absorbed again -- the invariant that makes the closure, without the held
        edges, the closure with them. An expansion re-derives the tuples that edge keeps."""
        alg, rel = self.alg, shape.rel
        held, partial = self._prune_held(shape)
        if died:
            # the formulas are closed under composition again before any held edge is judged
            # (the tuples killed above that a waiting path keeps come back: no net change)
            while partial:
                edge, g = partial.popitem()
                self.folded += 1
                self._expand(shape, edge, g, delta, changed, changes)
        while True:
            cut = [e for e in held if e not in self.stores[rel].facts]
            if not cut:
                return
            for edge in cut:
                self.folded += 1
                self._expand(shape, edge, held.pop(edge), delta, changed, changes)

    def _prune_held(self, shape: Closure) -> tuple[dict[tuple, Formula], dict[tuple, Formula]]:
        """After a deletion: drop the held and waiting edges that are gone, restrict the others;
        both tables."""
        alg, rel = self.alg, shape.rel
        held = self.lazy_edges.setdefault(rel, {})
        partial = self.partial_edges.setdefault(rel, {})
        valuation = alg.valuation(self.pending)
        for table in (held, partial):
            for edge, g in list(table.items()):
                if not alg.alive(g, valuation):
                    del table[edge]
                else:
                    table[edge] = alg.restrict(g, self._killer())  # a handful: restricted at once
        return held, partial

    def _repair(self, shape: Closure, gone: list[Fact], delta: Delta, changed: set[str], changes: ViewChanges) -> None:
        """After a deletion, with edges held or formulas repaired before: give back the tuples it
        killed that the live graph still connects, each with a formula of its own, and expand
        nothing. The formulas here are *sound* (every monomial is a path of the graph, live or
        since deleted) but need not hold every path: a held edge's paths were never OR-ed in.
        So a tuple whose formula is still true after a deletion is in the closure (soundness),
        and one whose formula turned false is checked against the graph: breadth-first from its
        source over the live edges, held ones included. One that is still reachable gets
        ``OR over k of R(i, k) ∧ E(k, j)`` over the predecessors ``k`` of ``j`` that ``i``
        reaches now (``R(i, i)`` TRUE), in breadth-first order so that the predecessor on a
        shortest path already has its formula -- sound, and true now. The cost is one search
        per source that lost a tuple and a conjunction per edge into a lost tuple, where
        expanding a held edge is a conjunction per pair of the closure (and, at 396 links,
        BDDs past the node cap: the new links' variables sit outside the depth-first order)."""
        alg, rel = self.alg, shape.rel
        self._prune_held(shape)
        if not gone:
            return
        into: dict[Any, dict[Any, list[Fact]]] = {}  # dst -> src -> the E tuples that are the edge
        out: dict[Any, set[Any]] = {}
        # the graph before the batch's insertions, less its deletions: the closure's insertions
        # come after (_closure), and a new edge would reach pairs the table never held
        born = self._cache_inserted.get(shape.edges, set()) | changes.added.get(shape.edges, set())
        for f in self.stores[shape.edges].facts:
            if f in born:
                continue
            a, b = f[shape.src], f[shape.dst]
            into.setdefault(b, {}).setdefault(a, []).append(f)
            out.setdefault(a, set()).add(b)
        edge_forms: dict[tuple, Formula] = {}

        def edge(k: Any, j: Any) -> Formula:
            got = edge_forms.get((k, j))
            if got is None:
                facts = into[j][k]
                got = edge_forms[(k, j)] = alg.union(self._fresh(shape.edges, f) for f in facts)
            return got

        table, true = self.formulas[rel], alg.true()
        lost: dict[Any, set[Any]] = {}
        for i, j in gone:
            lost.setdefault(i, set()).add(j)
        for i, targets in lost.items():
            reached, frontier, order = {i}, [i], []
            while frontier:
                nxt = []
                for u in frontier:
                    for v in out.get(u, ()):
                        if v not in reached:
                            reached.add(v)
                            nxt.append(v)
                            order.append(v)
                frontier = nxt
            todo = [j for j in order if j in targets]
            if i in targets and any(k in reached for k in into.get(i, ())):  # back to i: a cycle
                todo.append(i)
            for j in todo:
                terms = []
                for k in into[j]:
                    if k != i and (i, k) not in table:
                        continue
                    terms.append(alg.conj([edge(k, j)] if k == i else [self._fresh(rel, (i, k)), edge(k, j)]))
                    alg.tick()
                if not terms:  # the breadth-first predecessor has its formula: a bug, not data
                    raise AssertionError(f"absorption: {rel}{(i, j)} is reachable but no predecessor has a formula")
                form = terms[0] if len(terms) == 1 else alg.union(terms)
                self.work += len(terms)
                self.repaired += 1
                self._grown(rel, (i, j), None, form, form, delta, changed, changes)
            if todo:
                self.incomplete.add(rel)
        alg.check()

    def fold(self) -> None:
        """Expand every held edge into the closure's formulas (each tuple's formula is then its
        whole provenance, as without laziness); the view does not change. A closure whose
        formulas a deletion repaired (see :meth:`_repair`) lacks paths through live edges too:
        its formulas are built again by elimination over the live edges instead."""
        for comp in self.analysis.components:
            shape = self._shape(comp)
            if shape is None:
                continue
            if shape.rel in self.incomplete:
                self._eliminate_again(shape)
                continue
            changes, changed, delta = ViewChanges(), set(), {}  # type: ignore[var-annotated]
            for held in (self.partial_edges.get(shape.rel, {}), self.lazy_edges.get(shape.rel, {})):  # partial first
                while held:
                    edge, g = held.popitem()
                    self.folded += 1
                    self._expand(shape, edge, self.alg.restrict(g, self._killer()) if self.pending else g, delta, changed, changes)

    def _eliminate_again(self, shape: Closure) -> None:
        """Every formula of closure ``shape`` built again by elimination over the live edges
        (the same pairs: the view does not change), nothing held or repaired any more."""
        alg, rel = self.alg, shape.rel
        edges = [(f, self._fresh(shape.edges, f)) for f in list(self.formulas[shape.edges])]
        table = self.formulas[rel]
        pairs = set(table)
        table.clear()  # the old formulas freed first: the manager never holds both closures
        made, work = eliminate(alg, edge_formulas(alg, edges, shape), alg.check)
        self.work += work
        if set(made) != pairs:  # the view was exact before: a bug, not data
            raise AssertionError(f"absorption: {rel} built again differs from the maintained view")
        for head, form in made.items():
            table[head] = form
            self._changed(rel, head)
        self.stale.pop(rel, None)  # every formula is new, none mentions a pending variable
        self.lazy_edges.pop(rel, None)
        self.partial_edges.pop(rel, None)
        self.incomplete.discard(rel)

    def _grown(self, rel: str, head: Fact, old: Formula | None, form: Formula, got: Formula, delta: Delta, changed: set[str],
               changes: ViewChanges) -> None:
        """``head``'s formula in positive ``rel`` went from ``old`` to ``form``, gaining ``got``
        (what the components above receive in ``delta``)."""
        self.formulas[rel][head] = form
        self._changed(rel, head)
        if old is None:
            self.stores[rel].add_all((head,))
            changes.add(rel, head)
            changed.add(rel)
        acc = delta.setdefault(rel, {})
        acc[head] = self.alg.disj(acc.get(head), got)[0]

    # -- min/max through recursion: aggregate selection with a reserve -----------------------
    def _selective(self, comp: Component, killed: set[int], delta: Delta, changed: set[str], changes: ViewChanges) -> None:
        if self._feeds(comp, delta):
            self.settle()
        members = set(comp.relations)
        touched: dict[str, set[Fact]] = {rel: set() for rel in members}
        if killed:
            for rel in members:
                cands = self.candidates[rel]
                gone = self._restrict_candidates(cands, killed, touched[rel], rel)
                for c in gone:
                    self._ungroup(rel, c, c)
        stores = {**self.stores, **self.internal_stores}
        forms: dict[str, Mapping[Fact, Formula]] = {**self.formulas, **self.internal}
        start: dict[str, dict[Fact, Fact | None]] = {rel: {} for rel in members}  # group -> fact at batch start
        # the restricted groups first, so no stale formula meets the new tuples below
        current: Delta = {}
        for rel in members:
            for key in touched[rel]:
                self._reselect(rel, key, start[rel], current)
            touched[rel] = set()
        current.update({rel: d for rel, d in delta.items() if d and rel not in members})
        rounds = 0
        while current:
            for rule, _, head, new in self._derive(comp.rules, current, stores, forms):
                rel = rule.head.relation
                spec = self.aggregated[rel]
                # a candidate lacking a value of some aggregate is none (see selp.aggregate.best)
                if all(aggregate.has_value(v) for v in spec.values(head)) and self._candidate(rel, head, head, new):
                    touched[rel].add(spec.key(head))
            current = {}
            for rel in members:
                for key in touched[rel]:
                    self._reselect(rel, key, start[rel], current)
                touched[rel] = set()
            rounds += 1
            self.alg.check()
            groups = sum(len(self.internal[r]) for r in members)
            # a batch's improvements and new monomials each travel at most once through every
            # group when the recursion converges; twice that bound leaves room for both
            if current and aggregate.diverges(rounds, 2 * groups + 2):
                rel = next(iter(current))
                name, loc, _ = aggregate.site(comp.rules, rel)
                raise aggregate.no_convergence(rel, self.aggregated[rel].fns[0], rounds, groups, name, loc)
        self._export(members, start, killed, delta, changed, changes, lambda rel, key: self._best_fact(rel, key))

    def _candidate(self, rel: str, cid: Any, head: Fact, new: Formula) -> bool:
        """OR ``new`` into candidate (or rule instance) ``cid`` of ``rel``; True when it gained."""
        got = self.candidates[rel].get(cid)
        form, gained = self.alg.disj(None if got is None else got[1], new)
        if gained is None:
            return False
        if got is None:
            self.groups[rel].setdefault(self.aggregated[rel].key(head), set()).add(cid)
        self.candidates[rel][cid] = (head, form)
        self._changed(self._reserve(rel), cid)
        return True

    @staticmethod
    def _reserve(rel: str) -> str:
        """The support index's key of ``rel``'s candidates ('#': never a relation's name)."""
        return f"{rel}#reserve"

    def _restrict_candidates(self, cands: dict[Any, tuple[Fact, Formula]], killed: set[int], touched: set[Fact], rel: str) -> list[Any]:
        spec = self.aggregated[rel]
        alg = self.alg
        kill = alg.killer(killed)
        gone = []
        # through the support index, like positive tuples: restricting every candidate of the
        # reserve made a BDD deletion of shortest paths 45x dearer than DRed
        for cid in self._mentioning(rel, killed, self._reserve(rel), cands, lambda c: c[1]):
            fact, form = cands[cid]
            if alg.mentions(form, kill):
                rest = alg.restrict(form, kill)
                if rest == form:
                    continue
                touched.add(spec.key(fact))
                if rest is None:
                    gone.append(cid)
                else:
                    cands[cid] = (fact, rest)
        for cid in gone:
            del cands[cid]
        return gone

    def _ungroup(self, rel: str, cid: Any, fact: Fact) -> None:
        key = self.aggregated[rel].key(fact)
        members = self.groups[rel].get(key)
        if members is not None:
            members.discard(cid)
            if not members:
                del self.groups[rel][key]

    def _best_fact(self, rel: str, key: Fact) -> Fact | None:
        """The group's fact: per aggregate, the best value of its candidates (Multi AggSel)."""
        spec = self.aggregated[rel]
        best = aggregate.best(spec, (spec.values(self.candidates[rel][cid][0]) for cid in self.groups[rel].get(key, ())))
        return None if best is None else spec.fact(key, best)

    def _reselect(self, rel: str, key: Fact, start: dict[Fact, Fact | None], current: Delta) -> None:
        """Bring group ``key``'s fact inside the component up to date with its candidates: the
        best one not false (the reserve replaces a deleted best); new monomials of the group's
        fact, or all of a new best's, go into ``current``. With several aggregates the fact holds
        while, for every aggregate, a candidate reaching its value holds: the conjunction of the
        per-aggregate disjunctions, so that deleting the best of any one aggregate kills what was
        derived from the fact (it is re-derived from the group's next fact)."""
        spec = self.aggregated[rel]
        table, store = self.internal[rel], self.internal_stores[rel]
        old = next((f for f in store.lookup(self._key_positions(rel), key)), None)
        if key not in start:
            start[key] = old
        new = self._best_fact(rel, key)
        if new is None:
            if old is not None:
                del table[old]
                store.discard_all((old,))
            return
        cands = [self.candidates[rel][cid] for cid in self.groups[rel][key]]
        parts = [self.alg.union(f for c, f in cands if c[p] == new[p]) for p in spec.positions]
        form = parts[0] if len(parts) == 1 else self.alg.conj(parts)
        if old != new:
            if old is not None:
                del table[old]
                store.discard_all((old,))
            table[new] = form
            store.add_all((new,))
            current.setdefault(rel, {})[new] = form
            return
        added = self.alg.gained(form, table[new])
        table[new] = form
        if added is not None:
            current.setdefault(rel, {})[new] = added

    def _key_positions(self, rel: str) -> tuple[int, ...]:
        return self.aggregated[rel].keys

    def _export(self, members: Iterable[str], start: Mapping[str, Mapping[Fact, Fact | None]], killed: set[int], delta: Delta,
                changed: set[str], changes: ViewChanges, final: Callable[[str, Fact], Fact | None]) -> None:
        """Publish the groups whose fact changed over the batch: the old fact's variable is
        restricted above, the new fact gets a fresh one."""
        for rel in members:
            for key, old in start[rel].items():
                new = final(rel, key)
                if new == old:
                    continue
                if old is not None:
                    killed.add(self._drop_fact(rel, old, changes))
                if new is not None:
                    self._add_fact(rel, new, delta, changes)
                changed.add(rel)

    # -- non-recursive aggregates -------------------------------------------------------------
    def _aggregate(self, comp: Component, killed: set[int], delta: Delta, changed: set[str], changes: ViewChanges) -> None:
        if self._feeds(comp, delta):
            self.settle()
        (rel,) = comp.relations
        spec = self.aggregated[rel]
        touched: set[Fact] = set()
        if killed:
            for cid in self._restrict_candidates(self.candidates[rel], killed, touched, rel):
                self._ungroup(rel, cid, cid[2])
        current = {r: d for r, d in delta.items() if d}
        index = {rule: n for n, rule in enumerate(comp.rules)}
        for rule, env, head, new in self._derive(comp.rules, current, self.stores, self.formulas):
            cid = (index[rule], tuple(env), head)  # one rule instance: a rule and a binding
            if self._candidate(rel, cid, head, new):
                touched.add(spec.key(head))
        start = {rel: {key: self._current_fact(rel, key) for key in touched}}
        sites = [aggregate.site(comp.rules, rel, i) for i in range(len(spec.fns))]

        def final(r: str, key: Fact) -> Fact | None:
            rows = [spec.values(self.candidates[r][cid][0]) for cid in self.groups[r].get(key, ())]
            if not rows:
                return None
            vs = [aggregate.fold(fn, [row[i] for row in rows], *sites[i]) for i, fn in enumerate(spec.fns)]
            return None if any(v is None for v in vs) else spec.fact(key, vs)  # type: ignore[arg-type]

        self._export([rel], start, killed, delta, changed, changes, final)

    def _current_fact(self, rel: str, key: Fact) -> Fact | None:
        return next(iter(self.stores[rel].lookup(self._key_positions(rel), key)), None)

    # -- negation: recomputed ---------------------------------------------------------------
    def _recompute(self, comp: Component, killed: set[int], delta: Delta, changed: set[str], changes: ViewChanges) -> None:
        new = evaluate_component(self.analysis, comp, self.stores)
        for rel in comp.relations:
            target = new.get(rel, set())
            old = self.stores[rel].facts
            for f in old - target:
                killed.add(self._drop_fact(rel, f, changes))
                changed.add(rel)
            for f in target - old:
                self._add_fact(rel, f, delta, changes)
                changed.add(rel)

    # -- durable state: BDDs are written as JSON roots, the tables refer to them by index ----
    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        if not isinstance(self.alg, Bdds):
            return state
        roots: list[Any] = []

        def ref(form: Any) -> int:
            roots.append(form)
            return len(roots) - 1

        state["formulas"] = {rel: {f: ref(x) for f, x in t.items()} for rel, t in self.formulas.items()}
        state["internal"] = {rel: {f: ref(x) for f, x in t.items()} for rel, t in self.internal.items()}
        state["candidates"] = {rel: {c: (h, ref(x)) for c, (h, x) in t.items()} for rel, t in self.candidates.items()}
        state["lazy_edges"] = {rel: {e: ref(x) for e, x in t.items()} for rel, t in self.lazy_edges.items()}
        state["partial_edges"] = {rel: {e: ref(x) for e, x in t.items()} for rel, t in self.partial_edges.items()}
        state["alg"] = ("bdd", self.cap, self.alg.dump(roots), self.alg.node_cap)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for cache in ("_cache_support", "_cache_dirty", "_cache_shapes"):  # states saved before the index
            state.setdefault(cache, {})
        # states from before deferred restriction: every formula restricted, nothing pending
        state.setdefault("pending", set())
        state.setdefault("stale", {})
        state.setdefault("pending_cap", DEFAULT_PENDING_CAP)
        state.setdefault("settled", 0)
        state.setdefault("compact", DEFAULT_COMPACT)  # states from before the background compaction
        state["_cache_kill"] = (-1, None)
        state.setdefault("build", "eliminate")  # states from before it: the same formulas either way
        state.setdefault("lazy", True)  # states from before held edges: none held
        state.setdefault("lazy_edges", {})
        state.setdefault("partial_edges", {})
        state.setdefault("folded", 0)
        state.setdefault("repair", True)  # states from before the repair: their formulas are complete
        state.setdefault("incomplete", set())
        state.setdefault("repaired", 0)
        for gone in ("rebuild", "rebuilt", "_since_rebuild"):  # states of m23g's rebuild option
            state.pop(gone, None)
        if isinstance(state["alg"], tuple):
            _, cap, text, *node_cap = state["alg"]  # states written before the node cap have none
            alg = Bdds(cap, *node_cap)
            roots = alg.load(text)
            state["alg"] = alg
            state["formulas"] = {rel: {f: roots[i] for f, i in t.items()} for rel, t in state["formulas"].items()}
            state["internal"] = {rel: {f: roots[i] for f, i in t.items()} for rel, t in state["internal"].items()}
            state["candidates"] = {rel: {c: (h, roots[i]) for c, (h, i) in t.items()} for rel, t in state["candidates"].items()}
            state["lazy_edges"] = {rel: {e: roots[i] for e, i in t.items()} for rel, t in state["lazy_edges"].items()}
            state["partial_edges"] = {rel: {e: roots[i] for e, i in t.items()} for rel, t in state["partial_edges"].items()}
        self.__dict__.update(state)

    # -- measurements -------------------------------------------------------------------------
    def provenance_stats(self) -> dict[str, float]:
        """Bytes of the formulas of the derived tuples (and of the reserve), and per tuple."""
        tables = [self.formulas[r] for r in self.analysis.idb] + list(self.internal.values())
        tuples = sum(len(t) for t in tables)
        nbytes = sum(self.alg.nbytes(f) for t in tables for f in t.values())
        reserve = sum(self.alg.nbytes(f) for c in self.candidates.values() for _, f in c.values())
        return {
            "formulas": self.alg.name,
            "provenance_bytes": nbytes,
            "provenance_bytes_per_tuple": nbytes / tuples if tuples else 0.0,
            "reserve_bytes": reserve,
        }

    def names(self) -> dict[int, str]:
        """Variable -> the tuple it stands for (``link(a, b)``), for showing formulas."""
        from selp.values import format_value

        return {v: f"{rel}({', '.join(format_value(x) for x in f)})" for (rel, f), v in self.var_of.items()}


class _FreshTables:
    """``formulas[rel][fact]`` for :meth:`Absorption._derive` in a positive component: each
    stored formula read restricted first when stale (:meth:`Absorption._fresh`)."""

    def __init__(self, m: Absorption) -> None:
        self.m = m

    def __getitem__(self, rel: str) -> _FreshTable:
        return _FreshTable(self.m, rel)


class _FreshTable:
    """One relation of :class:`_FreshTables`."""

    def __init__(self, m: Absorption, rel: str) -> None:
        self.m, self.rel = m, rel

    def __getitem__(self, fact: Fact) -> Formula:
        return self.m._fresh(self.rel, fact)
