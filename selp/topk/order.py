"""The total order on derivations: weight (by the monoid's key), then size, then origin hash."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

from selp.topk.monoid import get_monoid


@lru_cache(maxsize=64)
def _key(monoid: str) -> Callable[[Any], float]:
    return get_monoid(monoid).key


def entry_order(monoid: str, entry) -> tuple:
    """Sort key of a DTable entry: better weight first, then the smaller tree, then the origin
    hash (an arbitrary but reproducible tie-break)."""
    return (_key(monoid)(entry.weight), entry.size, entry.origin)
