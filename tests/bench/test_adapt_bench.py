"""``selp bench adapt`` ([GI12] §V): the mapping-change generator's random sequences adapt
exactly, and the benchmark writes its tables and plots through a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selp.adapt.adapt import DELTA, adapt, commit, materialise
from selp.adapt.zduck import DuckZ
from selp.adapt.zprogram import check, evaluate, from_text, to_text
from selp.adapt.zref import ReferenceZ
from selp.gen.mapping_changes import MIX, apply_change, changed, data_updates, initial, source_data
from selp.language.parser import parse_program

ROOT = Path(__file__).resolve().parents[2]


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 3), n=st.integers(0, 16), provenance=st.booleans(), updates=st.sampled_from([0, 6]))
def test_random_change_sequences_adapt_exactly(seed: int, n: int, provenance: bool, updates: int) -> None:
    """Adapting on DuckDB after ``n`` random changes (and data changes) gives every view of P′
    with the counts the reference engine computes from scratch."""
    w = initial(seed)
    data = source_data(w, 10, seed)
    new = changed(w, n, seed)
    old_p, new_p = parse_program(w.text()), parse_program(new.text())
    engine = DuckZ()
    for s in w.sources:
        engine.put(s, len(w.types[s]), to_text(data[s]))
    materialise(engine, old_p, provenance)
    current = {s: dict(rows) for s, rows in data.items()}
    if updates:
        for s, rows in data_updates(w, data, updates, seed).items():
            engine.put(s + DELTA, len(w.types[s]), to_text(rows))
            for t, k in rows.items():
                current[s][t] = current[s].get(t, 0) + k
    adapt(engine, old_p, new_p, provenance, budget=0.005)
    commit(engine, old_p, new_p, provenance)
    expected = evaluate(ReferenceZ(), new_p, current)
    for v in check(new_p)[1]:
        assert from_text(engine.get(v.relation)) == expected[v.relation], (v.relation, new.changes)


@pytest.mark.parametrize("kind", list(MIX))
def test_every_change_kind_gives_a_valid_changed_program(kind: str) -> None:
    import random

    w = initial(0)
    new = apply_change(w, random.Random(1), kind)
    assert new.changes[-1][0] == kind and w.changes == []
    assert new.text() != w.text()
    check(parse_program(new.text()))  # non-recursive, counting-safe: adaptable


def test_change_sequences_are_deterministic_per_seed() -> None:
    w = initial(2)
    assert changed(w, 24, 5).text() == changed(w, 24, 5).text()
    assert changed(w, 24, 5).text() != changed(w, 24, 6).text()
    assert len(changed(w, 24, 5).changes) == 24


def test_long_change_sequences_keep_every_rule_one_join() -> None:
    """No change leaves a rule whose atoms split into two unconnected joins: such a cross product
    (seed 0, 128 changes: a dropped correspondence) exhausted memory at 30k rows per source."""
    new = changed(initial(0), 128, 0)
    for rules in new.views.values():
        for r in rules:
            groups = [{a for a in args if not a.startswith('"')} for _, args in r.body]
            reached = set(groups[0])
            for _ in groups:
                for g in groups:
                    if g & reached:
                        reached |= g
            assert all(g <= reached for g in groups), r.text()


def test_bench_adapt_writes_tables_and_plots(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "selp", "bench", "adapt", "--rows", "30", "--mix", "4", "--sweep", "0,2",
                          "--updates", "4", "--no-kinds", "--engine", "reference", "--out", str(out), "-q"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "mean_ratio" in run.stdout.splitlines()[0]
    doc = json.loads((out / "results.json").read_text())
    assert {"machine", "uptime", "summary", "params"} <= set(doc)
    experiments = {(s["experiment"], s["changes"], s["provenance"]) for s in doc["summary"]}
    assert experiments == {(e, n, p) for e, n in (("mix", 4), ("mix+updates", 4), ("sweep", 0), ("sweep", 2)) for p in (False, True)}
    views = [r for r in doc["rows"] if r["kind"] == "view"]
    assert all(r["recompute_s"] >= 0 and r["plan"] in ("reuse", "recompute") for r in views)
    # with no change every view is read back from its old instance
    assert all(r["plan"] == "reuse" for r in views if r["experiment"] == "sweep" and r["changes"] == 0)
    for name in ("per_view_mix.png", "per_view_mix_updates.png", "sweep.png", "summary.md"):
        assert (out / name).stat().st_size > 0


def test_bench_adapt_bad_sweep_is_one_line(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-m", "selp", "bench", "adapt", "--sweep", "x", "--out", str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode != 0 and "Traceback" not in run.stderr and "--sweep" in run.stderr
