"""Infinite POLYNOMIAL series print a bounded prefix by default, everything with ``--full``."""

from __future__ import annotations

from collections import Counter

from click.testing import CliRunner

from helpers.cdss import cdss_cli, load_running_example, make_cdss, ok
from selp.cdss.proql.semirings import SERIES_PREFIX, Poly, Polynomial
from selp.cli import main


def series(n: int, infinite: bool = True) -> Poly:
    # b, m(b·u), m(m(b·u)·u), ...: the unrolled cycle B(1,1) = b + m4(B(1,1)·U(1,1))
    terms, t = Counter(), "b"
    for _ in range(n):
        terms[(t,)] += 1
        t = f"m({t}·u)"
    return Poly.of(terms, infinite)


def test_bounded_prints_the_smallest_terms_and_says_how_many_are_left_out():
    s = Polynomial()
    text = s.bounded(series(30))
    shown = text.split(" + … ")[0].split(" + ")
    assert len(shown) == SERIES_PREFIX and shown[0] == "b" and shown[1] == "m(b·u)"
    assert text.endswith(f"… (infinite series: cyclic provenance; {SERIES_PREFIX} of the 30 terms found shown, --full prints them)")
    assert len(text) < len(s.format(series(30)))
    # a finite polynomial, or a short series, is printed whole
    assert s.bounded(series(30, infinite=False)) == s.format(series(30, infinite=False))
    assert s.bounded(series(3)) == s.format(series(3))


def test_cli_full_prints_every_term(tmp_path):
    d = make_cdss(tmp_path, trust=False)
    load_running_example(d)
    ok(cdss_cli("edit", d, "--peer", "PBioSQL", "+B(1, 1)"))
    ok(cdss_cli("edit", d, "--peer", "PuBio", "+U(1, 1)"))
    for p in ("PBioSQL", "PuBio"):
        ok(cdss_cli("publish", d, "--peer", p))
    ok(cdss_cli("exchange", d, "--peer", "PBioSQL", "-q"))
    q = "FOR [U $x] WHERE $x.nam = 1 INCLUDE PATH [$x] <-+ [] RETURN $x"
    short = CliRunner().invoke(main, ["proql", str(d), q]).output
    full = CliRunner().invoke(main, ["proql", str(d), q, "--full"]).output
    assert "(infinite series: cyclic provenance" in short and "(infinite series: cyclic provenance)" in full
    assert len(full) >= len(short)
