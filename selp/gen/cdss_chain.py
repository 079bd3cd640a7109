"""The incremental-maintenance benchmark's CDSS: a chain of peers with full mappings both ways.

The chapter 6 set-up of [Kar09] in miniature: ``peers`` peers, each with one relation
``R_k(id, v)``; full mappings along a chain ``R_k -> R_k+1`` and back ``R_k+1 -> R_k`` (so the
mapping graph is one cycle-rich component, like Example 14), and base data drawn from a shared
pool, so that peers overlap and many tuples have several derivations.
"""

from __future__ import annotations

import random

from selp.cdss.compile import CompiledCDSS, compile_cdss
from selp.cdss.config import parse_cdss


def generated_cdss(peers: int) -> CompiledCDSS:
    """The benchmark's CDSS: a chain of peers with full mappings both ways."""
    maps = []
    for k in range(peers - 1):
        maps.append(f'"f{k}: R{k}(x, y) -> R{k + 1}(x, y)"')
        maps.append(f'"b{k}: R{k + 1}(x, y) -> R{k}(x, y)"')
    lines = [f"mappings = [{', '.join(maps)}]"]
    for k in range(peers):
        lines.append(f'[peers.P{k}.relations.R{k}]\nattributes = ["id: int", "v: int"]')
    return compile_cdss(parse_cdss("\n".join(lines) + "\n"))


def base_data(peers: int, size: int, seed: int = 0, overlap: float = 0.5) -> dict[str, set[tuple]]:
    """``size`` base tuples per peer; a share ``overlap`` of them comes from a pool every peer
    draws from (tuples with several derivations), the rest is the peer's own."""
    rng = random.Random(seed)
    pool = [(i, rng.randrange(10**6)) for i in range(size)]
    out = {}
    for k in range(peers):
        shared = set(rng.sample(pool, int(size * overlap)))
        own = {(10**6 * (k + 1) + i, rng.randrange(10**6)) for i in range(size - len(shared))}
        out[f"R{k}_l"] = shared | own
    return out
