"""Named pattern files (the bundled selp/bench/programs/*.patterns) and the instrumentation benchmark over them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from selp.bench.datasets import spec
from selp.bench.instrument import PROGRAMS, bench_instrument, pattern_shape
from selp.bench.patterns import load_named_patterns
from selp.errors import SelpError
from selp.instrument.instrument import instrument
from selp.language import parse_program_file
from selp.language.pattern_parser import check_pattern, parse_pattern
from selp.language.types import resolve_types
from selp.language.validate import analyze


@pytest.mark.parametrize("name", PROGRAMS)
def test_bundled_patterns_fit_their_program_and_can_match(name: str) -> None:
    """Every shipped pattern names real relations with well-typed constants, and none is
    statically empty (instrumentation leaves root relations)."""
    analysis = analyze(parse_program_file(str(spec(name).program)))
    types = resolve_types(analysis, {})
    patterns = load_named_patterns(spec(name).patterns)
    assert patterns
    for pname, (_, pattern) in patterns.items():
        assert check_pattern(pattern, analysis, types) == [], pname
        assert instrument(analysis, pattern).roots, f"{pname} can never match"


def test_patterns_file_errors_are_located(tmp_path: Path) -> None:
    f = tmp_path / "x.patterns"
    f.write_text("# comment\n\nok: tc(*, *)\nbad: tc(*, *\n", encoding="utf-8")
    with pytest.raises(SelpError, match=r"x.patterns:4:13: syntax error"):
        load_named_patterns(f)
    f.write_text("tc(*, *)\n", encoding="utf-8")
    with pytest.raises(SelpError, match=r"x.patterns:1:1: expected 'name: pattern'"):
        load_named_patterns(f)
    f.write_text("a: tc\na: edge\n", encoding="utf-8")
    with pytest.raises(SelpError, match=r"x.patterns:2:1: pattern a is defined twice"):
        load_named_patterns(f)


def test_pattern_shape_counts_the_paper_measures() -> None:
    p4 = parse_pattern("a[/ b[// c], // d[// e, // f]]")
    assert pattern_shape(p4) == {"nodes": 6, "transitive": 4, "width": 2}
    assert pattern_shape(parse_pattern("a // b OR NOT c / d")) == {"nodes": 4, "transitive": 1, "width": 1}


def test_instrumentation_bench_covers_every_pattern_and_the_optimised_side_is_no_bigger() -> None:
    rows = bench_instrument(repeat=1)
    expected = {(n, p) for n in PROGRAMS for p in load_named_patterns(spec(n).patterns)}
    assert {(r["program"], r["pattern"]) for r in rows} == expected
    for r in rows:
        assert r["rules_opt"] <= r["rules_noopt"], r
        assert r["ms_opt"] >= 0


def test_bench_instrument_cli_prints_a_table_and_writes_results(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "selp", "bench", "instrument", "--repeat", "1", "--out", str(tmp_path), "-q"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "| amie    | p4x " in r.stdout
    doc = json.loads((tmp_path / "results.json").read_text())
    assert any(row["pattern"] == "p13" and row["rules_opt"] > 0 for row in doc["rows"])
