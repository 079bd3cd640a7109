"""``selp bench bidir`` ([Kar09] §6.4.7) through a real process at a tiny scale."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bidir_bench_writes_the_table_and_bidirectional_is_larger(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "selp", "bench", "bidir", "--peers", "2,3", "--scales", "10",
                          "--out", str(out), "-q"], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    header = run.stdout.splitlines()[0]
    for col in ("peers", "direction", "op", "side_effects", "seconds", "policy_s", "instance", "requested", "deleted"):
        assert f" {col} " in header
    assert (out / "table.md").read_text() == run.stdout
    doc = json.loads((out / "results.json").read_text())
    assert {"date", "machine", "load_average"} <= set(doc)
    rows = doc["rows"]
    for n in (2, 3):
        size = {r["direction"]: r["instance"] for r in rows if r["peers"] == n and r["op"] == "exchange"}
        assert size["bidirectional"] >= size["unidirectional"] > 0
        modes = {r["side_effects"]: r for r in rows if r["peers"] == n and r["op"] == "delete"}
        assert set(modes) == {"tolerate", "avoid"}
        assert all(r["deleted"] >= r["requested"] - r["kept_back"] for r in modes.values())
    assert (out / "fig6_14_size_time.png").stat().st_size > 0 and (out / "fig6_15_deletion.png").stat().st_size > 0


def test_bidir_bench_bad_peers_is_one_line(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-m", "selp", "bench", "bidir", "--peers", "x", "--out", str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode != 0 and "Traceback" not in run.stderr and "--peers" in run.stderr


def test_bidir_bench_engines_agree_on_sizes_and_deletions() -> None:
    from selp.bench.bidir import bench_bidir

    def key(rows: list[dict]) -> list[tuple]:
        return [(r["peers"], r["direction"], r["op"], r["side_effects"], r["instance"], r["deleted"], r["kept_back"]) for r in rows]

    assert key(bench_bidir([2, 3], 10, engine="embedded")) == key(bench_bidir([2, 3], 10, engine="reference"))
