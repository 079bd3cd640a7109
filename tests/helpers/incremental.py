"""Incremental maintenance checked against full recomputation by the reference engine: the
running example's state, random CDSSs with random changes."""

from __future__ import annotations

import dataclasses
import random

from selp.cdss.compile import compile_cdss
from selp.cdss.config import parse_cdss
from selp.cdss.errors import CdssError
from selp.cdss.model import CDSS, TrustPolicy
from selp.engines.local import evaluate  # the reference engine: the oracle
from selp.language.validate import analyze
from selp.values import Skolem


def null(n: int) -> Skolem:
    """The labeled null m3 invents for the name ``n``."""
    return Skolem("f_m3_c", (n,))


def no_trust(c: CDSS) -> CDSS:
    """``c`` with every peer trusting everything (the dissertation's Example 5)."""
    peers = tuple(dataclasses.replace(p, policy=TrustPolicy()) for p in c.peers)
    return dataclasses.replace(c, peers=peers)


def full_state(compiled, edb: dict[str, set]) -> dict[str, set]:
    """What a full evaluation produces: every EDB relation (empty when not given) and every IDB."""
    analysis = analyze(compiled.program) if hasattr(compiled, "program") else compiled
    base = {rel: set(edb.get(rel, ())) for rel in analysis.edb}
    return {**base, **evaluate(analysis, base)}


def expected_after(compiled, state, inserts, deletes) -> dict[str, set]:
    """What full recomputation gives after applying the changes to ``state``'s base relations."""
    analysis = analyze(compiled.program) if hasattr(compiled, "program") else compiled
    edb = {rel: (state[rel] - deletes.get(rel, set())) | inserts.get(rel, set()) for rel in analysis.edb}
    return full_state(compiled, edb)


# the running example's local contributions (Example 5)
RUNNING = {"G_l": {(1, 2, 3), (3, 5, 2)}, "B_l": {(3, 5)}, "U_l": {(2, 5)}}


# two peers whose B tuples can support each other through m4
CYCLE = """
name = "cycle"
mappings = ["m4: B(i, c), U(n, c) -> B(i, n)"]
[peers.PB.relations.B]
attributes = ["id: int", "nam: int"]
[peers.PU.relations.U]
attributes = ["nam: int", "can: int"]
"""


def random_cdss_text(rng: random.Random) -> str:
    """A small random CDSS: 2-3 peers with 1-2 int relations each, 2-5 mappings with 1-2 atoms
    on either side (cycles likely), existentials, constants, and random trust conditions."""
    rels: list[tuple[str, str, int]] = []
    lines: list[str] = []
    npeers = rng.randint(2, 3)
    k = 0
    for p in range(npeers):
        for _ in range(rng.randint(1, 2)):
            arity = rng.randint(1, 3)
            rels.append((f"P{p}", f"R{k}", arity))
            k += 1
    maps = []
    for m in range(rng.randint(2, 5)):
        body, bvars = [], []
        for _ in range(rng.randint(1, 2)):
            _, name, arity = rng.choice(rels)
            args = []
            for _ in range(arity):
                if rng.random() < 0.1:
                    args.append(str(rng.randint(0, 2)))
                else:
                    v = rng.choice("xyzw")
                    args.append(v)
                    bvars.append(v)
            body.append(f"{name}({', '.join(args)})")
        if not bvars:
            continue
        head, exist = [], False
        for _ in range(rng.randint(1, 2)):
            _, name, arity = rng.choice(rels)
            args = []
            for _ in range(arity):
                r = rng.random()
                if r < 0.15:
                    args.append("e")
                    exist = True
                elif r < 0.22:
                    args.append(str(rng.randint(0, 2)))
                else:
                    args.append(rng.choice(bvars))
            head.append(f"{name}({', '.join(args)})")
        ex = "exists e. " if exist else ""
        maps.append(f'"m{m}: {", ".join(body)} -> {ex}{", ".join(head)}"')
    lines.append(f"mappings = [{', '.join(maps)}]")
    for p in range(npeers):
        peer = f"P{p}"
        for _, name, arity in [r for r in rels if r[0] == peer]:
            attrs = ", ".join(f'"a{i}: int"' for i in range(arity))
            lines.append(f"[peers.{peer}.relations.{name}]\nattributes = [{attrs}]")
            if rng.random() < 0.3:
                src = rng.choice([f"P{q}" for q in range(npeers)])
                lines.append(f'[[peers.{peer}.trust]]\naction = "distrust"\nrelation = "{name}"\nfrom = ["{src}"]\nwhen = "a0 >= {rng.randint(1, 2)}"')
    return "\n".join(lines) + "\n"


def random_case(seed: int):
    """(compiled, state, inserts, deletes) from ``seed``; random CDSSs that are not weakly
    acyclic are skipped over deterministically."""
    rng = random.Random(seed)
    while True:
        try:
            cdss = parse_cdss(random_cdss_text(rng))
            break
        except CdssError:
            continue
    compiled = compile_cdss(cdss)
    analysis = analyze(compiled.program)
    dom = range(3)

    def tuples(rel: str, n: int) -> set:
        ar = analysis.arities[rel]
        return {tuple(rng.choice(dom) for _ in range(ar)) for _ in range(n)}

    edb = {}
    for rel in sorted(analysis.edb):
        if rel.endswith("_l"):
            edb[rel] = tuples(rel, rng.randint(0, 5))
    state = full_state(compiled, edb)
    for rel in sorted(analysis.edb):
        if rel.endswith("_r") and rng.random() < 0.3:  # reject some imported tuples up front
            imported = sorted(state[rel[:-2] + "_t"], key=repr)
            edb[rel] = set(rng.sample(imported, min(len(imported), 1)))
    state = full_state(compiled, edb)
    inserts, deletes = {}, {}
    for rel in sorted(analysis.edb):
        have = sorted(state[rel], key=repr)
        if rel.endswith("_l"):
            if have and rng.random() < 0.7:
                deletes[rel] = set(rng.sample(have, rng.randint(1, len(have))))
            if rng.random() < 0.5:
                inserts[rel] = tuples(rel, rng.randint(1, 3))
        else:
            imported = sorted(state[rel[:-2] + "_t"], key=repr)
            if imported and rng.random() < 0.4:
                inserts[rel] = set(rng.sample(imported, 1))
            if have and rng.random() < 0.5:
                deletes[rel] = set(rng.sample(have, 1))
    return compiled, state, inserts, deletes
