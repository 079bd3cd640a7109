"""What every maintenance strategy shares: the program's components classified by how they can
be maintained, the relations' stores, net view changes, and recomputing one component.

A strategy walks the components in evaluation order once per batch of base changes; each
component turns the changes of the relations below it into changes of its own. How it does so
depends on its kind (:func:`kind`):

* ``positive`` -- rules without negation or aggregates (recursive or not): monotone, so both
  absorption provenance and DRed maintain them incrementally;
* ``aggregate`` -- a non-recursive aggregate (count, sum, min, max over rule instances);
* ``selective`` -- min/max through recursion (aggregate selection, see :mod:`selp.aggregate`);
* ``recompute`` -- anything with negation: not monotone, so it is re-evaluated from its
  (maintained) inputs whenever one of them changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from selp.engines.local import FactStore, evaluate
from selp.language.ast import Atom, Rule
from selp.language.validate import Analysis, Component
from selp.values import Value, format_value

Fact = tuple[Value, ...]
INIT = "#init"  # the pseudo-relation whose one change fires the rules without body atoms, once


def kind(comp: Component, aggregated: Mapping[str, tuple[int, str]]) -> str:
    """How ``comp`` is maintained: ``positive``, ``aggregate``, ``selective`` or ``recompute``."""
    if any(r.negative_atoms for r in comp.rules):
        return "recompute"
    if comp.selective:
        return "selective"
    if any(rel in aggregated for rel in comp.relations):
        return "aggregate"
    return "positive"


def inputs(comp: Component) -> set[str]:
    """The relations the component's rules read (positive and negated atoms)."""
    return {b.relation for r in comp.rules for b in r.body if isinstance(b, Atom)}


def positive_positions(rule: Rule) -> list[int]:
    """Body indexes of the rule's positive atoms."""
    return [i for i, b in enumerate(rule.body) if isinstance(b, Atom) and not b.negated]


def new_stores(analysis: Analysis) -> dict[str, FactStore]:
    """An empty store per relation of the program."""
    return {rel: FactStore() for rel in analysis.arities}


def component_analysis(analysis: Analysis, comp: Component) -> Analysis:
    """``analysis`` narrowed to one component: its relations are the IDB, every other relation
    is read as input (so :func:`selp.engines.local.evaluate` recomputes just this component)."""
    idb = frozenset(comp.relations)
    return Analysis(analysis.program, analysis.arities, frozenset(analysis.arities) - idb, idb, (comp,))


def evaluate_component(analysis: Analysis, comp: Component, stores: Mapping[str, FactStore]) -> dict[str, set[Fact]]:
    """The component's relations computed from scratch over the current contents of its inputs."""
    sub = component_analysis(analysis, comp)
    return evaluate(sub, {rel: stores[rel].facts for rel in inputs(comp)})


@dataclass
class ViewChanges:
    """The net changes of the derived relations over one batch (a tuple removed and then
    derived again within the batch is no change)."""

    added: dict[str, set[Fact]] = field(default_factory=dict)
    removed: dict[str, set[Fact]] = field(default_factory=dict)

    def add(self, rel: str, fact: Fact) -> None:
        """Record that ``fact`` entered ``rel``."""
        gone = self.removed.get(rel)
        if gone is not None and fact in gone:
            gone.discard(fact)
        else:
            self.added.setdefault(rel, set()).add(fact)

    def remove(self, rel: str, fact: Fact) -> None:
        """Record that ``fact`` left ``rel``."""
        new = self.added.get(rel)
        if new is not None and fact in new:
            new.discard(fact)
        else:
            self.removed.setdefault(rel, set()).add(fact)

    def count(self) -> int:
        """The number of changed tuples."""
        return sum(map(len, self.added.values())) + sum(map(len, self.removed.values()))

    def lines(self, relations: Iterable[str] | None = None) -> list[str]:
        """``-rel(args)`` then ``+rel(args)`` lines, sorted (only ``relations`` when given)."""
        from selp.database import sorted_rows

        wanted = None if relations is None else set(relations)
        out = []
        for sign, table in (("-", self.removed), ("+", self.added)):
            for rel in sorted(table):
                if wanted is not None and rel not in wanted:
                    continue
                out.extend(f"{sign}{rel}({', '.join(format_value(v) for v in row)})" for row in sorted_rows(table[rel]))
        return out


def diff(old: Mapping[str, set[Fact]], new: Mapping[str, set[Fact]]) -> ViewChanges:
    """The changes turning relations ``old`` into ``new``."""
    out = ViewChanges()
    for rel in set(old) | set(new):
        a, b = old.get(rel, set()), new.get(rel, set())
        if b - a:
            out.added[rel] = b - a
        if a - b:
            out.removed[rel] = a - b
    return out


def replace_facts(store: FactStore, rel: str, new: set[Fact], changes: ViewChanges) -> tuple[set[Fact], set[Fact]]:
    """Make ``store`` hold exactly ``new``; record and return ``(added, removed)``."""
    added, removed = new - store.facts, store.facts - new
    store.discard_all(removed)
    store.add_all(added)
    for f in removed:
        changes.remove(rel, f)
    for f in added:
        changes.add(rel, f)
    return added, removed
