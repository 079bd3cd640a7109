"""Ranked trust on random CDSSs: the DuckDB fixpoint (selp.cdss.ranked_duck) equals the oracle.

Random CDSSs (helpers.incremental: cycles, existentials -- Skolem terms --, constants, Boolean
trust conditions) get random ``[peers.P.costs]`` on several peers (peer and mapping costs,
``"2x"``/``"3x + 1"`` mapping functions, fractional costs, thresholds) or ``trust_only_from``,
random local data and curators' rejections of imported tuples. :func:`ranked_duck` must give
exactly :func:`ranked_local`'s rejections (``R_x``), instance cost vectors and import cost
vectors (``R_t`` and ``R_i``) for every viewpoint.
"""

from __future__ import annotations

import random

import pytest

from selp.cdss.compile import compile_cdss
from selp.cdss.config import parse_cdss
from selp.cdss.errors import CdssError
from selp.cdss.ranked import RankedProgram, ranked_local
from selp.cdss.ranked_duck import ranked_duck
from selp.language.validate import analyze
from helpers.incremental import full_state, random_cdss_text

SEEDS = range(40)


def ranked_text(rng: random.Random) -> str:
    """A random CDSS (helpers.incremental) with ranked trust on some of its peers."""
    text = random_cdss_text(rng)
    peers = sorted({line.split(".")[1] for line in text.splitlines() if line.startswith("[peers.")})
    maps = [m.split(":")[0].strip('"') for m in text.split("mappings = [")[1].split("]\n")[0].split('", "')]
    maps = [m.lstrip('"') for m in maps if m]
    extra = []
    for p in peers:
        r = rng.random()
        if r < 0.6:
            pc = ", ".join(f"{q} = {rng.choice([0, 1, 2, 3, 0.5])}" for q in peers if rng.random() < 0.8)
            mc = []
            for m in maps:
                if rng.random() < 0.5:
                    mc.append(f'{m} = {rng.choice(["1", "2", "0.5", chr(34) + "2x" + chr(34), chr(34) + "3x + 1" + chr(34)])}')
            lines = [f"[peers.{p}.costs]", f"peers = {{ {pc} }}", f"mappings = {{ {', '.join(mc)} }}"]
            if rng.random() < 0.8:
                lines.append(f"threshold = {rng.choice([0, 1, 2, 3, 4, 6, 2.5])}")
            extra.append("\n".join(lines))
        elif r < 0.75:  # the ancestry reading, enforced as ranked trust too
            allowed = ", ".join(f'"{q}"' for q in peers if q != p and rng.random() < 0.5)
            extra.append(f"[peers.{p}]\ntrust_only_from = [{allowed}]")
    return text + "\n" + "\n".join(extra) + "\n"


def ranked_case(seed: int):
    """(ranked program with every peer a viewpoint, base data) from ``seed``; CDSSs that are
    not weakly acyclic are skipped over deterministically."""
    rng = random.Random(seed)
    while True:
        try:
            cdss = parse_cdss(ranked_text(rng))
            break
        except CdssError:
            continue
    compiled = compile_cdss(cdss)
    analysis = analyze(compiled.program)
    base: dict[str, set] = {}
    for rel in sorted(analysis.edb):
        if rel.endswith("_l"):
            ar = analysis.arities[rel]
            base[rel] = {tuple(rng.randrange(3) for _ in range(ar)) for _ in range(rng.randint(0, 6))}
    state = full_state(compiled, {r: v for r, v in base.items()})
    for rel in sorted(analysis.edb):
        if rel.endswith("_r"):
            imported = sorted(state[rel[:-2] + "_i"], key=repr)
            base[rel] = set(rng.sample(imported, min(len(imported), rng.choice([0, 0, 1, 2]))))
    return RankedProgram(compiled, tuple(p.name for p in cdss.peers)), base


@pytest.mark.parametrize("seed", SEEDS)
def test_ranked_duck_equals_ranked_local_on_random_cdss(seed):
    rp, base = ranked_case(seed)
    expected = ranked_local(rp, base)
    got = ranked_duck(rp, base, collect=True)
    assert got.rejections == expected.rejections
    assert got.outputs == expected.outputs
    assert got.imports == expected.imports


def test_random_cases_exercise_what_ranked_trust_decides():
    """The seeds above are not vacuous: across them some imports are rejected for their cost,
    some come through Skolem terms, some tuples' costs use a scaled mapping function, some
    curation rejections apply, and some fixpoints take more than two rounds."""
    from selp.values import Skolem

    rejected = skolems = scaled = curated = deep = 0
    for seed in SEEDS:
        rp, base = ranked_case(seed)
        res = ranked_local(rp, base)
        rejected += sum(map(len, res.rejections.values()))
        skolems += any(isinstance(v, Skolem) for rows in res.imports.values() for t in rows for v in t)
        scaled += any(k != 1 for m in rp.mappings for k in m.scales)
        curated += any(base.get(t.rejections) for t in rp.targets.values() if t.kind == "t")
        deep += res.rounds > 2
    assert rejected and skolems and scaled and curated and deep, (rejected, skolems, scaled, curated, deep)
