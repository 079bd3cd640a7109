"""The interface of a maintenance strategy: a view kept equal to the program's fixpoint over a
base that changes by batches of insertions and deletions."""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from typing import Any, Iterable, Mapping

from selp.engines.local import FactStore
from selp.language.validate import Analysis
from selp.maintain.program import Fact, ViewChanges, new_stores


class Maintainer(ABC):
    """A maintained view of one program. Subclasses keep whatever state their strategy needs
    next to :attr:`stores` (every relation's current tuples, base and derived)."""

    strategy: str = ""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self.stores: dict[str, FactStore] = new_stores(analysis)

    @abstractmethod
    def apply(self, inserts: Mapping[str, Iterable[Fact]], deletes: Mapping[str, Iterable[Fact]]) -> ViewChanges:
        """Apply one batch of base changes (deletions first, then insertions; inserting a present
        fact or deleting an absent one does nothing) and return the derived relations' changes."""

    def view(self) -> dict[str, set[Fact]]:
        """The derived relations as they are now."""
        return {rel: set(self.stores[rel].facts) for rel in self.analysis.idb}

    def base(self) -> dict[str, set[Fact]]:
        """The base relations as they are now."""
        return {rel: set(self.stores[rel].facts) for rel in self.analysis.edb}

    def provenance_stats(self) -> dict[str, float]:
        """Sizes of what the strategy keeps besides the tuples (none by default)."""
        return {"provenance_bytes": 0, "provenance_bytes_per_tuple": 0.0}

    def __getstate__(self) -> dict[str, Any]:
        # compiled join plans hold closures: rebuilt on demand after loading
        state = dict(self.__dict__)
        for k in [k for k in state if k.startswith("_cache")]:
            state[k] = {}
        return state


def present_changes(stores: Mapping[str, FactStore], inserts: Mapping[str, Iterable[Fact]], deletes: Mapping[str, Iterable[Fact]]) -> tuple[dict[str, set[Fact]], dict[str, set[Fact]]]:
    """The batch reduced to what changes the base: deletions of present facts, insertions of
    facts absent once the deletions are done."""
    dels = {rel: {f for f in fs if f in stores[rel].facts} for rel, fs in deletes.items()}
    ins = {}
    for rel, fs in inserts.items():
        gone = dels.get(rel, set())
        ins[rel] = {f for f in fs if f not in stores[rel].facts or f in gone}
    return {r: s for r, s in ins.items() if s}, {r: s for r, s in dels.items() if s}


def say(message: str) -> None:
    """A note on stderr (the strategy's fallbacks)."""
    print(message, file=sys.stderr)
