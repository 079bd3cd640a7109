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
    assert "4 mapping(s)" in r.stdout and "weakly acyclic" in r.stdout
    r = selp("cdss", "compile", str(BIDIR))
    assert r.returncode == 0, r.stderr
    # each direction is a tgd of its own, with its own provenance relation
    for name in ("m1_fwd", "m1_bwd", "m2_fwd", "m2_bwd"):
        assert f"P_{name}(" in r.stdout
    assert "G_i(f_m1_bwd_i(n, c), c, n) :- P_m1_bwd(n, c)" in r.stdout.replace("m1_bwd_1_i: ", "")
