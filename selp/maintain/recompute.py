"""The ``recompute`` strategy: evaluate the whole program from scratch after every batch (on any
registered engine) and report the difference -- the baseline the incremental strategies are
measured against, and the oracle of their tests."""

from __future__ import annotations

from typing import Iterable, Mapping

from selp.language.validate import Analysis
from selp.maintain.base import Maintainer, present_changes
from selp.maintain.program import Fact, ViewChanges, diff, replace_facts


class Recompute(Maintainer):
    """Recomputation from scratch on ``engine`` (a registered engine name)."""

    strategy = "recompute"

    def __init__(self, analysis: Analysis, base: Mapping[str, Iterable[Fact]], engine: str = "reference") -> None:
        super().__init__(analysis)
        self.engine = engine
        for rel in analysis.edb:
            self.stores[rel].add_all(base.get(rel, ()))
        self._refresh(ViewChanges())

    def _refresh(self, changes: ViewChanges) -> ViewChanges:
        from selp.engines.registry import get_engine

        new = get_engine(self.engine).evaluate(self.analysis, self.base())
        for rel in self.analysis.idb:
            replace_facts(self.stores[rel], rel, set(new.get(rel, ())), changes)
        return changes

    def apply(self, inserts: Mapping[str, Iterable[Fact]], deletes: Mapping[str, Iterable[Fact]]) -> ViewChanges:
        ins, dels = present_changes(self.stores, inserts, deletes)
        if not ins and not dels:
            return ViewChanges()
        for rel, fs in dels.items():
            self.stores[rel].discard_all(fs)
        for rel, fs in ins.items():
            self.stores[rel].add_all(fs)
        return self._refresh(ViewChanges())


def from_scratch(analysis: Analysis, base: Mapping[str, Iterable[Fact]], engine: str = "reference") -> dict[str, set[Fact]]:
    """The derived relations of ``analysis`` over ``base`` (what every strategy must equal)."""
    from selp.engines.registry import get_engine

    out = get_engine(engine).evaluate(analysis, {rel: set(fs) for rel, fs in base.items()})
    return {rel: set(out.get(rel, ())) for rel in analysis.idb}


__all__ = ["Recompute", "diff", "from_scratch"]
