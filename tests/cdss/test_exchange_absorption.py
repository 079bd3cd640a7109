"""``selp cdss exchange --strategy absorption``: the compiled program maintained with absorption
provenance across publications, its formulas kept in the epoch directory, equal after every
exchange to recomputing the published base data from scratch (bundled cyclic examples)."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from helpers.cdss import cdss_cli, load_running_example, make_cdss, ok, one_line_error
from helpers.paths import BIDIR
from selp.cdss.absorption import STATE_FILE
from selp.cdss.store import STORE_DIR, Store
from selp.language.validate import analyze
from selp.maintain.recompute import from_scratch

# per example: peer -> (relation, a generator of a random tuple over a small domain)
INT = lambda rng: rng.randint(1, 5)  # noqa: E731
STR = lambda rng: rng.choice("abcde")  # noqa: E731
SCHEMAS = {
    "bio": {"PGUS": ("G", (INT, INT, INT)), "PBioSQL": ("B", (INT, INT)), "PuBio": ("U", (INT, INT))},
    "bidir": {"PGUS": ("G", (INT, STR, STR)), "PBioSQL": ("S", (INT, STR)), "PuBio": ("U", (STR, STR))},
}


def make_bidir(tmp_path: Path) -> Path:
    """The bidir example with its local data imported and published."""
    d = tmp_path / "bidir"
    shutil.copytree(BIDIR, d, ignore=shutil.ignore_patterns(STORE_DIR))
    ok(cdss_cli("init", d))
    for peer, rel in [("PGUS", "G"), ("PBioSQL", "B"), ("PBioSQL", "S"), ("PuBio", "U")]:
        ok(cdss_cli("import", d, "--peer", peer, "--relation", rel, d / "data" / peer / f"{rel}.csv"))
        ok(cdss_cli("publish", d, "--peer", peer))
    return d


def literal(rel: str, row: tuple) -> str:
    return f"{rel}({', '.join(str(v) if isinstance(v, int) else repr(v).replace(chr(39), chr(34)) for v in row)})"


def expected_state(d: Path) -> dict[str, set]:
    """Every relation of the compiled program recomputed by the reference engine over the
    published base data."""
    with Store.open(d) as s:
        base = s.base_data(s.last_publication())
        analysis = analyze(s.compiled.program)
        edb = {rel: base.get(rel, set()) for rel in analysis.edb}
        return {**from_scratch(analysis, edb), **edb}


def exchanged_state(d: Path, peer: str) -> tuple[dict[str, set], dict]:
    with Store.open(d) as s:
        info = s.last_exchange()
        assert info is not None and info.strategy == "absorption"
        assert (s.epoch_dir(info.epoch) / STATE_FILE).exists()
        return s.read_epoch(s.peer_epoch(peer)), info.stats


def random_round(d: Path, rng: random.Random, schema: dict, local: dict[str, set], rejected: dict[str, set]) -> None:
    """A few random edits (local insertions and deletions, rejections and their undoing) at
    random peers, each peer's published."""
    peers = sorted(schema)
    for _ in range(rng.randint(1, 4)):
        peer = rng.choice(peers)
        rel, gens = schema[peer]
        row = tuple(g(rng) for g in gens)
        what = rng.random()
        if what < 0.45:
            ok(cdss_cli("edit", d, "--peer", peer, "+" + literal(rel, row)))
            local[peer].add(row)
        elif what < 0.75 and local[peer]:
            gone = rng.choice(sorted(local[peer]))
            ok(cdss_cli("edit", d, "--peer", peer, "-" + literal(rel, gone)))
            local[peer].discard(gone)
        elif what < 0.9:
            ok(cdss_cli("reject", d, "--peer", peer, literal(rel, row)))
            rejected[peer].add(row)
        elif rejected[peer]:
            back = rng.choice(sorted(rejected[peer]))
            ok(cdss_cli("reject", d, "--peer", peer, "--undo", literal(rel, back)))
            rejected[peer].discard(back)
    for peer in peers:
        ok(cdss_cli("publish", d, "--peer", peer))


@pytest.mark.parametrize("example,seed", [("bio", 1), ("bio", 2), ("bidir", 3), ("bidir", 4)])
def test_random_publications_equal_recomputation(tmp_path, example, seed):
    """After each round of publications, an absorption exchange (by a random peer, continuing
    from the previous epoch's formulas) equals recomputation; keys clash, so some edits are
    refused and skipped."""
    rng = random.Random(seed)
    if example == "bio":
        d = make_cdss(tmp_path, trust=False)
        load_running_example(d)
    else:
        d = make_bidir(tmp_path)
    schema = SCHEMAS[example]
    local: dict[str, set] = {p: set() for p in schema}
    rejected: dict[str, set] = {p: set() for p in schema}
    for step in range(8):
        try:
            random_round(d, rng, schema, local, rejected)
        except AssertionError:  # a key clash refused by the store: publish what was recorded
            for peer in schema:
                ok(cdss_cli("publish", d, "--peer", peer))
        peer = rng.choice(sorted(schema))
        ok(cdss_cli("exchange", d, "--peer", peer, "--strategy", "absorption", "-q"))
        got, stats = exchanged_state(d, peer)
        assert got == expected_state(d), (example, seed, step)
        assert stats["running"] == "absorption"
        assert bool(stats.get("absorption_built")) == (step == 0)  # maintained from then on


def test_formulas_survive_between_exchanges_and_other_strategies_rebuild(tmp_path):
    """An absorption exchange after a recompute one builds its formulas (said on stderr);
    the next one continues from them; the removed local tuple's derivations go with it."""
    d = make_cdss(tmp_path, trust=False)
    load_running_example(d)
    ok(cdss_cli("exchange", d, "--peer", "PGUS"))
    res = cdss_cli("exchange", d, "--peer", "PBioSQL", "--strategy", "absorption")
    ok(res)
    assert "computed by recompute: building the formulas" in res.stderr
    ok(cdss_cli("edit", d, "--peer", "PGUS", "-G(1, 2, 3)"))
    ok(cdss_cli("publish", d, "--peer", "PGUS"))
    res = cdss_cli("exchange", d, "--peer", "PuBio", "--strategy", "absorption")
    assert "formulas (publication" in ok(res) + res.stderr
    assert "0 insertion(s), 1 deletion(s)" in res.stderr
    got, stats = exchanged_state(d, "PuBio")
    assert got == expected_state(d)
    assert (1, 3) not in got["B_o"] and stats["deleted_base"] == 1


def test_absorption_is_refused_on_spark_in_one_line(tmp_path):
    d = make_cdss(tmp_path)
    load_running_example(d)
    res = cdss_cli("exchange", d, "--peer", "PGUS", "--engine", "spark", "--strategy", "absorption")
    one_line_error(res, "strategy absorption runs on the in-process engines", "--engine embedded")
