"""Bidirectional mappings through the ``selp`` command, in real processes ([Kar09] §5.3)."""

from __future__ import annotations

import pytest

from helpers.cli import selp
from helpers.paths import BIDIR

# Example 17's canonical universal solution: x1..x4 (B, S) and x5..x8 (G) are the labeled nulls
# f_m2_bwd_i(n, c) and f_m1_bwd_i(n, c) of the right-to-left tgds, one per U tuple
EXAMPLE_17 = {
    "G": ['G(1, "a", "b")', 'G(2, "d", "e")']
    + [f'G(f_m1_bwd_i("{n}","{c}"), "{c}", "{n}")' for n, c in [("b", "a"), ("c", "a"), ("e", "d"), ("f", "g")]],
    "B": ['B(3, "b")', 'B(3, "c")', 'B(4, "h")']
    + [f'B(f_m2_bwd_i("{n}","{c}"), "{n}")' for n, c in [("b", "a"), ("c", "a"), ("e", "d"), ("f", "g")]],
    "S": ['S(3, "a")', 'S(5, "k")']
    + [f'S(f_m2_bwd_i("{n}","{c}"), "{c}")' for n, c in [("b", "a"), ("c", "a"), ("e", "d"), ("f", "g")]],
    "U": ['U("b", "a")', 'U("c", "a")', 'U("e", "d")', 'U("f", "g")'],
}


def printed(stdout: str) -> dict[str, list[str]]:
    """relation -> its printed tuples, from `selp cdss eval`'s output."""
    out: dict[str, list[str]] = {}
    current = None
    for line in stdout.splitlines():
        if line and not line.startswith(" "):
            current = line.split("(")[0].split(".")[-1]
            out[current] = []
        elif line.strip() and current:
            out[current].append(line.strip())
    return out


@pytest.mark.parametrize("engine", ["embedded", "reference"])
def test_example_17_canonical_universal_solution(engine):
    r = selp("cdss", "eval", str(BIDIR), "--with-nulls", "--engine", engine)
    assert r.returncode == 0, r.stderr
    got = printed(r.stdout)
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in EXAMPLE_17.items()}
    # certain answers: the nulls are dropped
    r = selp("cdss", "eval", str(BIDIR), "--relation", "B", "--engine", engine)
    assert printed(r.stdout) == {"B": ['B(3, "b")', 'B(3, "c")', 'B(4, "h")']}


def test_check_and_compile_show_the_pair_of_tgds():
    r = selp("cdss", "check", str(BIDIR))
    assert r.returncode == 0, r.stderr
    assert "2 mapping(s), 2 bidirectional (1 with update policies), 4 tgd(s)" in r.stdout and "weakly acyclic" in r.stdout
    r = selp("cdss", "compile", str(BIDIR))
    assert r.returncode == 0, r.stderr
    # each direction is a tgd of its own, with its own provenance relation
    for name in ("m1_fwd", "m1_bwd", "m2_fwd", "m2_bwd"):
        assert f"P_{name}(" in r.stdout
    assert "G_i(f_m1_bwd_i(n, c), c, n) :- P_m1_bwd(n, c)" in r.stdout.replace("m1_bwd_1_i: ", "")


def test_explain_and_proql_see_the_two_directions(tmp_path):
    import shutil

    from click.testing import CliRunner

    from selp.cli import main

    d = tmp_path / "bidir"
    shutil.copytree(BIDIR, d)
    run = lambda *a: CliRunner().invoke(main, [*map(str, a)])  # noqa: E731
    assert run("cdss", "init", d).exit_code == 0
    for peer, rel in [("PGUS", "G"), ("PBioSQL", "B"), ("PBioSQL", "S"), ("PuBio", "U")]:
        assert run("cdss", "import", d, "--peer", peer, "--relation", rel, d / "data" / peer / f"{rel}.csv").exit_code == 0
        assert run("cdss", "publish", d, "--peer", peer).exit_code == 0
    assert run("cdss", "exchange", d, "--peer", "PuBio", "-q").exit_code == 0
    # U(b, a) comes from G(1, a, b) through m1's left-to-right tgd
    out = run("cdss", "explain", d, "--peer", "PuBio", 'U("b", "a")').output
    assert 'U(b, a)  <- m1_fwd from PGUS' in out and 'U(b, a)  <- m2_fwd from PBioSQL' in out, out
    # the right-to-left tgd of m1 made one G tuple per U tuple, each with its own null id
    res = run("proql", d, "FOR [G $x] <m1_bwd [U $y] RETURN $x")
    assert res.exit_code == 0, res.output
    assert "(4 binding(s)" in res.output and 'f_m1_bwd_i("f","g")' in res.output.replace(" ", "")
