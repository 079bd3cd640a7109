"""Static detection of decomposable recursive components (the technique of BigDatalog and RaSQL
[SYICCZ16]).

A recursive component is *decomposable on argument position p* when every recursive rule is
linear (one positive body atom from the component) and passes the variable at position ``p`` of
that atom unchanged to position ``p`` of its head, with the same ``p`` for every relation of the
component. Then every fact derived from a fact with value ``v`` at ``p`` has ``v`` at ``p`` too,
so the facts of the component split by the value at ``p`` into groups that never meet: the exit
rules (no body atom from the component) produce the initial facts, and each group's fixpoint can
run on its own -- on one partition holding that group's initial facts and a copy of every other
relation the recursive rules read. Right-recursive transitive closure
``tc(x, z) :- e(x, y), tc(y, z)`` passes position 1, left-recursive ``tc(x, z) :- tc(x, y), e(y, z)``
position 0; nonlinear ``tc(x, z) :- tc(x, y), tc(y, z)`` passes none.

What the analysis allows, and why:

* comparisons and negated atoms in recursive rules are evaluated where the rule is, on complete
  data: a negated relation belongs to a lower stratum and is copied whole to every partition;
* Skolem terms may appear in recursive heads except at ``p`` (the value there must be the body's);
* an input relation whose every occurrence in the recursive rules carries the rule's
  decomposition variable at one fixed column (and is never negated) is *keyed*: it can be split
  by that column alongside the component instead of copied;
* conservatively refused: a constant or a variable repeated within the recursive atom at ``p``
  (such rules are rare and reasoning about them buys nothing), nullary relations, and a negated
  atom of the component itself (stratification forbids it; refused should it ever reach here).

**Decomposition by value components** (:func:`decompose_values`, tried when no position is
passed: transitive closure with a symmetry rule ``tc(x, y) :- tc(y, x)``). Let the component's
*inputs* be the facts of the relations outside it that its rules read in positive atoms, and
``G`` the *value co-occurrence graph* of the inputs: its nodes are values, and the values of one
input fact are linked (for a binary fact, the fact itself is an edge). Suppose that every rule of
the component (exit and recursive)

1. has positive body atoms that are connected through shared (named) variables -- the graph
   whose nodes are the atoms and whose edges join two atoms sharing a variable is connected;
2. has a head whose every argument is a variable occurring in a positive body atom (no
   constants, Skolem terms, arithmetic or aggregates in the head);
3. negates only relations outside the component (stratification) -- these are read whole.

*Claim 1*: every fact ``f`` the component derives has all its values in one connected component
``C(f)`` of ``G``. By induction on the height of a derivation of ``f`` by rule ``r`` from body
facts ``b1..bn`` (the instance's positive atoms): each ``bi`` is an input fact (its values are
pairwise linked in ``G``, so in one component) or a fact of the component derived lower (in
one component by the induction hypothesis). Two atoms sharing a variable ``x`` are matched by
facts that share the value of ``x``, so their components meet and are equal; by condition 1 the
atoms' graph is connected, so all ``bi`` lie in one component ``C``. By condition 2 every value
of ``f`` is the value of a body variable, hence a value of some ``bi``: ``f``'s values lie in ``C``.

*Claim 2*: every derivation of ``f`` uses only facts (of the component and inputs) whose values
lie in ``C(f)``, and negated facts. The same argument, read top-down: the body facts of the
last step share ``C`` with each other and with ``f``'s values (``f`` has at least one value, no
nullary relation is allowed); induct into each body fact of the component.

So partitioning every fact of the component and every input fact by the component (its *label*)
of one of its values -- we take the first argument -- sends every rule instance whole to one
partition: the partition-local fixpoint and DTable of :mod:`selp.engines.spark_partitioned` and
:mod:`selp.topk.spark_partitioned` are exact with the inputs *keyed* on that label, and the
negated relations broadcast. Nonlinear rules satisfy the claim too, but the partition tasks
are only exercised on linear ones, so they are refused (conservative). A partition holds several
value components, whose facts never meet either: the component-by-component ranking takes them
one at a time, grouping the partition's facts by the classes of their values
(:func:`selp.topk.decomposed.value_classes`) where a position would group them by a column.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from typing import Any, Callable

from selp.language.ast import Atom, Rule, Var, term_vars
from selp.language.validate import Component


@dataclass(frozen=True)
class Decomposition:
    """How a decomposable component splits: the argument position every relation of the
    component is partitioned on, and what each partition needs of the other relations."""

    position: int
    exit_rules: tuple[Rule, ...]  # no body atom from the component: they seed the partitions
    recursive_rules: tuple[Rule, ...]
    keyed: dict[str, int]  # input relation -> its column holding the decomposition value
    broadcast: tuple[str, ...]  # input relations every partition reads whole, sorted
    # kind "values" (:func:`decompose_values`): partitioned on the value component of the value
    # at ``position`` (0), not on that value; ``graph`` the relations whose facts link values
    kind: str = "position"
    graph: tuple[str, ...] = ()
    # set by the engine at run time for kind "values": the frame (v, label) of value components
    labels: Any = field(default=None, compare=False)


@dataclass(frozen=True)
class NotDecomposable:
    """Why a component must run in global rounds."""

    reason: str


def _component_atoms(rule: Rule, members: set[str]) -> list[Atom]:
    return [b for b in rule.body if isinstance(b, Atom) and b.relation in members]


def _passes(rule: Rule, atom: Atom, p: int) -> bool:
    """Whether ``rule`` passes the variable at position ``p`` of ``atom`` unchanged to its head."""
    t = atom.args[p]
    if not isinstance(t, Var) or t.anonymous:
        return False
    if sum(1 for a in atom.args if a == t) != 1:
        return False  # conservative: a repeated variable in the recursive atom
    return rule.head.args[p] == t


def decompose(comp: Component) -> Decomposition | NotDecomposable:
    """The decomposition of ``comp``, or why there is none (see the module docstring)."""
    if not comp.recursive:
        return NotDecomposable("not recursive")
    members = set(comp.relations)
    arities = {r.head.relation: r.head.arity for r in comp.rules}
    nullary = sorted(rel for rel, n in arities.items() if n == 0)
    if nullary:
        return NotDecomposable(f"{nullary[0]} has no arguments to partition on")
    exit_rules: list[Rule] = []
    recursive: list[tuple[Rule, Atom]] = []
    for rule in comp.rules:
        if rule.aggregate is not None:
            # the per-partition fixpoint has no aggregate selection: min/max through recursion
            # keeps the global rounds (conservative; a group key holding the position could go local)
            return NotDecomposable(f"rule {rule.name} aggregates ({rule.aggregate[1].fn}): aggregate selection runs in global rounds")
        atoms = _component_atoms(rule, members)
        negated = [a for a in atoms if a.negated]
        if negated:
            return NotDecomposable(f"rule {rule.name} negates {negated[0].relation} of its own component")
        if not atoms:
            exit_rules.append(rule)
        elif len(atoms) > 1:
            return NotDecomposable(f"rule {rule.name} reads the component {len(atoms)} times (nonlinear)")
        else:
            recursive.append((rule, atoms[0]))
    width = min(arities.values())
    position = next((p for p in range(width) if all(_passes(r, a, p) for r, a in recursive)), None)
    if position is None:
        return NotDecomposable("no argument position is passed unchanged from the recursive atom to the head by every recursive rule")
    keyed, broadcast = _inputs(recursive, members, position)
    return Decomposition(position, tuple(exit_rules), tuple(r for r, _ in recursive), keyed, broadcast)


def decompose_values(comp: Component) -> Decomposition | NotDecomposable:
    """The decomposition of ``comp`` by value components (see the module docstring), or why
    there is none; position 0, every positive input of the recursive rules keyed on column 0."""
    if not comp.recursive:
        return NotDecomposable("not recursive")
    members = set(comp.relations)
    if any(r.head.arity == 0 for r in comp.rules):
        return NotDecomposable("a nullary relation has no value to partition on")
    exit_rules: list[Rule] = []
    recursive: list[Rule] = []
    graph: set[str] = set()
    for rule in comp.rules:
        if rule.aggregate is not None:
            return NotDecomposable(f"rule {rule.name} aggregates ({rule.aggregate[1].fn})")
        atoms = _component_atoms(rule, members)
        if any(a.negated for a in atoms):
            return NotDecomposable(f"rule {rule.name} negates its own component")
        if len(atoms) > 1:
            return NotDecomposable(f"rule {rule.name} reads the component {len(atoms)} times (nonlinear)")
        why = _value_connected(rule)
        if why:
            return NotDecomposable(f"rule {rule.name} {why}")
        (recursive if atoms else exit_rules).append(rule)
        graph |= {a.relation for a in rule.positive_atoms if a.relation not in members}
    keyed: dict[str, int] = {}
    negated: set[str] = set()
    for rule in recursive:
        for b in rule.body:
            if isinstance(b, Atom) and b.relation not in members:
                if b.negated:
                    negated.add(b.relation)
                else:
                    keyed[b.relation] = 0
    for rel in negated:
        keyed.pop(rel, None)  # read whole wherever it is negated
    return Decomposition(0, tuple(exit_rules), tuple(recursive), keyed, tuple(sorted(negated)), "values", tuple(sorted(graph)))


def _value_connected(rule: Rule) -> str:
    """Why ``rule`` breaks condition 1 or 2 of the value-component decomposition, or ""."""
    atoms = rule.positive_atoms
    if not atoms:
        return "has no positive body atom"
    bound = {v for a in atoms for v in a.vars() if not v.anonymous}
    for t in rule.head.args:
        if not isinstance(t, Var) or t not in bound:
            return "has a head argument that is not a variable of a positive body atom"
    reached, frontier = {0}, [0]
    while frontier:
        i = frontier.pop()
        mine = {v for v in atoms[i].vars() if not v.anonymous}
        for j, a in enumerate(atoms):
            if j not in reached and mine & {v for v in a.vars() if not v.anonymous}:
                reached.add(j)
                frontier.append(j)
    if len(reached) != len(atoms):
        return "has body atoms sharing no variable (not connected)"
    return ""


def decompose_any(comp: Component) -> Decomposition | NotDecomposable:
    """By a position if one is passed, else by value components; the reason names both."""
    d = decompose(comp)
    if isinstance(d, Decomposition):
        return d
    v = decompose_values(comp)
    if isinstance(v, Decomposition):
        return v
    if v.reason == "not recursive" or d.reason == v.reason:
        return d
    return NotDecomposable(f"{d.reason}; not by value components: {v.reason}")


def _inputs(recursive: list[tuple[Rule, Atom]], members: set[str], p: int) -> tuple[dict[str, int], tuple[str, ...]]:
    """The relations outside the component that the recursive rules read, split into keyed ones
    (relation -> column) and broadcast ones."""
    columns: dict[str, set[int] | None] = {}  # None: must be broadcast
    for rule, atom in recursive:
        key = atom.args[p]
        for b in rule.body:
            if not isinstance(b, Atom) or b.relation in members:
                continue
            here = None if b.negated else {q for q, t in enumerate(b.args) if t == key}
            if b.relation not in columns:
                columns[b.relation] = here
            else:
                old = columns[b.relation]
                columns[b.relation] = None if old is None or here is None else old & here
    keyed = {rel: min(cols) for rel, cols in columns.items() if cols}
    broadcast = tuple(sorted(rel for rel in columns if rel not in keyed))
    return keyed, broadcast


@dataclass(frozen=True)
class SingleRelation:
    """A program whose only derived relation (filter relations aside) is one decomposable
    recursive relation: every other fact is an input, so every rule instance lies in one group
    of the relation's facts: by their value at ``decomposition.position``, or by the class of
    their values for a decomposition by value components (kind ``values``)."""

    relation: str
    decomposition: Decomposition


def single_relation(analysis: Any, is_filter: Callable[[str], bool]) -> SingleRelation | NotDecomposable:
    """Whether the whole of ``analysis``'s program (an instrumented P_p) decomposes as one
    relation does, or why not. ``is_filter(rel)``: relations that only filter rule instances
    (demand, witness copies), in no derivation tree. The component-by-component top-k
    (:mod:`selp.topk.decomposed`) runs exactly when this holds and its kernel can form the
    rules' instances; the reason otherwise is what its stats line says."""
    derived = sorted({r.head.relation for r in analysis.program.rules if not is_filter(r.head.relation)})
    if len(derived) != 1:
        return NotDecomposable(f"{len(derived)} derived relations (one is needed)")
    rel = derived[0]
    if rel in analysis.edb:
        return NotDecomposable(f"{rel} is also loaded as EDB")
    comp = next(c for c in analysis.components if rel in c.relations)
    if len(comp.relations) != 1:
        return NotDecomposable(f"{rel} is mutually recursive with {len(comp.relations) - 1} relation(s)")
    d = decompose_any(comp)  # by a position, else by value components (a symmetry rule)
    if not isinstance(d, Decomposition):
        return d
    return SingleRelation(rel, d)
