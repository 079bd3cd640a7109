"""Derivation trees ([DGM15] Section 2.2) and a brute-force enumerator of all small ones.

A derivation tree of a fact is labelled by facts: the root by the fact, leaves by EDB facts, and
the children of an internal node by the instantiated positive body atoms of one rule whose
instantiated head is the node (an *occurrence* of that rule). A fact of an aggregated relation is
the head of its group's *witnesses*: the instances whose value is the group's (min/max), or every
instance of the group (count/sum); with several aggregates, an instance reaching at least one
min/max value, or every instance when one aggregate is count/sum. Negated atoms and comparisons of
the rule must hold but are not children: negation is checked against the program's fixpoint.

:func:`enumerate_trees` lists **every** tree with at most ``max_rules`` rule occurrences. It is
deliberately naive (trees of size <= n are assembled from trees of size <= n-1) because it is the
test oracle for pattern instrumentation and top-k: correctness over speed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping

from selp.aggregate import has_value
from selp.engines.joins import BodyPlan
from selp.engines.local import evaluate
from selp.instrument.witness import is_filter_relation
from selp.language.ast import Atom, Rule, Spec
from selp.language.validate import Analysis
from selp.values import Value, format_value

FactKey = tuple[str, tuple[Value, ...]]  # (relation, values)


@dataclass(frozen=True)
class DerivationTree:
    """A node of a derivation tree: a fact, the rule applied to derive it (None for an EDB leaf)
    and the trees of the rule's positive body atoms, in body order."""

    relation: str
    values: tuple[Value, ...]
    rule: str | None = None
    children: tuple["DerivationTree", ...] = ()
    # trees are hashed and measured many times (sets of trees, budgets): cache both, as they
    # would otherwise cost a walk of the whole tree each time
    _hash: int = field(init=False, repr=False, compare=False, default=0)
    _size: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        if self.rule is None and self.children:
            raise ValueError("an EDB leaf (rule None) cannot have children")
        object.__setattr__(self, "_hash", hash((self.relation, self.values, self.rule, self.children)))
        object.__setattr__(self, "_size", (self.rule is not None) + sum(c._size for c in self.children))

    def __hash__(self) -> int:
        return self._hash

    @property
    def fact(self) -> FactKey:
        return (self.relation, self.values)

    @property
    def is_leaf(self) -> bool:
        return self.rule is None

    def size(self) -> int:
        """The number of rule occurrences (internal nodes); 0 for an EDB leaf."""
        return self._size

    def nodes(self) -> Iterator["DerivationTree"]:
        """This node and every node below it, in preorder."""
        yield self
        for c in self.children:
            yield from c.nodes()

    def facts(self) -> Iterator[FactKey]:
        """The ``(relation, values)`` label of every node, in preorder (with repetitions)."""
        for n in self.nodes():
            yield n.fact

    def rules(self) -> Iterator[str]:
        """The rule of every occurrence, in preorder (with repetitions)."""
        for n in self.nodes():
            if n.rule is not None:
                yield n.rule

    def label(self) -> str:
        """``dealsWith("Cuba","France")  [r1]``; EDB leaves have no bracket."""
        text = f"{self.relation}({','.join(format_value(v) for v in self.values)})"
        return text if self.rule is None else f"{text}  [{self.rule}]"

    def render(self) -> str:
        """A drawing of the tree, one node per line::

            dealsWith("Cuba","France")  [r1]
            └─ dealsWith("France","Cuba")  [r2]
               ├─ imports("France","tobacco")
               └─ exports("Cuba","tobacco")
        """
        lines = [self.label()]

        def walk(node: DerivationTree, indent: str) -> None:
            for i, c in enumerate(node.children):
                last = i == len(node.children) - 1
                lines.append(f"{indent}{'└─ ' if last else '├─ '}{c.label()}")
                walk(c, indent + ("   " if last else "│  "))

        walk(self, "")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()


def leaf(relation: str, *values: Value) -> DerivationTree:
    """An EDB leaf: ``leaf("exports", "Cuba", "tobacco")``."""
    return DerivationTree(relation, tuple(values))


def node(rule: str, relation: str, values: Iterable[Value], *children: DerivationTree) -> DerivationTree:
    """A rule occurrence: ``node("r1", "dealsWith", ("Cuba", "France"), child)``."""
    return DerivationTree(relation, tuple(values), rule, tuple(children))


@dataclass(frozen=True)
class Instantiation:
    """One ground instance of a rule whose body holds in the fixpoint."""

    rule: Rule
    head: tuple[Value, ...]
    body: tuple[FactKey, ...]  # the positive atoms, in body order


def instantiations(analysis: Analysis, facts: Mapping[str, set[tuple[Value, ...]]]) -> list[Instantiation]:
    """Every instance of every rule whose positive atoms are in ``facts`` (EDB and IDB), whose
    negated atoms are not, and whose comparisons hold. ``facts`` must be closed under the rules
    (a fixpoint), so that negation is decided against the final IDB."""
    indexes: dict[tuple[str, tuple[int, ...]], dict[tuple, list[tuple]]] = {}

    def lookup(_source: str, rel: str, positions: tuple[int, ...], key: tuple) -> Iterable[tuple]:
        idx = indexes.get((rel, positions))
        if idx is None:
            idx = {}
            for f in facts.get(rel, ()):
                idx.setdefault(tuple(f[p] for p in positions), []).append(f)
            indexes[(rel, positions)] = idx
        return idx.get(key, ())

    def negated(rel: str, pattern: tuple, eqs: tuple = ()) -> bool:
        return any(
            all(p is None or p == v for p, v in zip(pattern, f)) and all(f[q] == f[g[0]] for g in eqs for q in g)
            for f in facts.get(rel, ())
        )

    # an aggregated fact's trees are its witnesses' (docs/language.md): an instance derives the
    # group's fact when some aggregate is count/sum (every instance counts), else when it reaches
    # at least one min/max value -- in a recursion, only if it has every aggregate's value (one
    # missing a value is no candidate of aggregate selection)
    groups: dict[str, dict[tuple, tuple]] = {}
    specs = analysis.program.aggregated()
    selective = {rel for c in analysis.components for rel in c.selective}
    for rel, spec in specs.items():
        groups[rel] = {spec.key(f): f for f in facts.get(rel, ())}
    out: list[Instantiation] = []
    seen: set[tuple] = set()
    for rule in analysis.program.rules:
        plan = BodyPlan(rule)
        head = plan.head_builder()
        spec = specs.get(rule.head.relation)
        # an agg@ atom of an instrumented program filters, as a negated one does: no child
        positives = [i for i, b in enumerate(rule.body) if isinstance(b, Atom) and not b.negated and not is_filter_relation(b.relation)]
        for env in plan.bindings(lookup, negated):
            values = head(env)
            if spec is not None:
                fact = groups[rule.head.relation].get(spec.key(values))
                if fact is None or not _witnesses(spec, values, fact, rule.head.relation in selective):
                    continue  # no witness of its group's fact
                values = fact
            inst = Instantiation(
                rule,
                values,
                tuple((rule.body[i].relation, plan.atom_fact(i, env)) for i in positives),  # type: ignore[union-attr]
            )
            key = (rule.name, inst.head, inst.body)
            if key not in seen:
                seen.add(key)
                out.append(inst)
    return out


def _witnesses(spec: Spec, instance: tuple[Value, ...], fact: tuple[Value, ...], selective: bool) -> bool:
    """Whether a rule instance (its head tuple) is a witness of its group's ``fact``."""
    if not spec.selective:
        return True
    if selective and not all(has_value(v) for v in spec.values(instance)):
        return False
    return any(instance[p] == fact[p] for p in spec.positions)


def enumerate_trees(
    analysis: Analysis, edb: Mapping[str, Iterable[tuple[Value, ...]]], max_rules: int
) -> dict[FactKey, set[DerivationTree]]:
    """All derivation trees with at most ``max_rules`` rule occurrences, per IDB fact.

    ``edb`` is what :func:`selp.engines.local.evaluate` takes (inline program facts are not added
    here; :func:`selp.database.load_database` already merges them). Facts with no tree that small
    are left out. EDB facts are leaves, so every tree has size >= 1.
    """
    edb_sets = {rel: set(edb.get(rel, ())) for rel in analysis.edb}
    idb = evaluate(analysis, edb_sets)
    everything: dict[str, set[tuple[Value, ...]]] = {**edb_sets, **idb}
    insts = instantiations(analysis, everything)

    # trees[n][fact]: all trees of an IDB fact with at most n rule occurrences
    level: dict[FactKey, list[DerivationTree]] = {}
    for n in range(1, max_rules + 1):
        prev = level

        def options(child: FactKey) -> list[DerivationTree]:
            if child[0] in analysis.edb:
                return [DerivationTree(child[0], child[1])]
            return prev.get(child, [])

        new: dict[FactKey, set[DerivationTree]] = {}
        for inst in insts:
            rel = inst.rule.head.relation
            choices = [options(c) for c in inst.body]
            for kids in _within_budget(choices, n - 1):
                new.setdefault((rel, inst.head), set()).add(
                    DerivationTree(rel, inst.head, inst.rule.name, kids)
                )
        level = {f: sorted(ts, key=DerivationTree.size) for f, ts in new.items()}
    return {f: set(ts) for f, ts in level.items()}


def _within_budget(choices: list[list[DerivationTree]], budget: int) -> Iterator[tuple[DerivationTree, ...]]:
    """Every pick of one tree per position whose sizes add up to at most ``budget``."""
    if not choices:
        yield ()
        return
    if any(not ts for ts in choices):  # a body fact without a small enough tree
        return
    first, rest = choices[0], choices[1:]
    # the other positions need at least their smallest tree (0 for an EDB leaf)
    reserve = sum(min(t.size() for t in ts) for ts in rest)
    for t in first:  # sorted by size
        s = t.size()
        if s + reserve > budget:
            break
        for tail in _within_budget(rest, budget - s):
            yield (t,) + tail
