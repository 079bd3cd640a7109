"""The dataset generators (AMIE, IRIS)."""

from __future__ import annotations

from pathlib import Path

from selp.bench.datasets import spec
from selp.engines.result import run_local
from selp.gen.amie import generate_amie
from selp.language import parse_program_file
from selp.language.validate import analyze

AMIE = analyze(parse_program_file(str(spec("amie").program)))


def test_generator_is_deterministic_and_loads_with_weights(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    stats = generate_amie(a, 500, seed=3)
    generate_amie(b, 500, seed=3)
    for f in sorted(a.iterdir()):
        assert f.read_bytes() == (b / f.name).read_bytes()
    rows = sum(len(f.read_text().splitlines()) - 1 for f in a.glob("*.csv"))
    assert rows == stats["edb_rows"]
    res = run_local(AMIE, a)
    # every derived relation of the program is populated, and mined rules add facts
    assert all(res.count(rel) > 0 for rel in res.relations())
    assert res.count("livesIn") > len((a / "livesIn_YAGO.csv").read_text().splitlines()) - 1


def test_constants_of_the_starred_patterns_exist(tmp_path: Path) -> None:
    generate_amie(tmp_path, 300, seed=0)
    cells = {cell for f in tmp_path.glob("*.csv") for line in f.read_text().splitlines()[1:] for cell in line.split(",")[:2]}
    assert {"city1", "country1", "person1"} <= cells


def test_iris_generator_is_deterministic_and_its_output_grows_with_records(tmp_path: Path) -> None:
    from selp.gen.iris import generate_iris

    iris = analyze(parse_program_file(str(spec("iris").program)))
    generate_iris(tmp_path / "x", 200, seed=1)
    generate_iris(tmp_path / "y", 200, seed=1)
    assert (tmp_path / "x" / "c.csv").read_bytes() == (tmp_path / "y" / "c.csv").read_bytes()
    small = run_local(iris, tmp_path / "x")
    generate_iris(tmp_path / "z", 800, seed=1)
    big = run_local(iris, tmp_path / "z")
    total = lambda r: sum(r.count(rel) for rel in r.relations())  # noqa: E731
    assert small.count("path") > 0 and 3 < total(big) / total(small) < 5  # about linear in records


def test_explain_generator_is_deterministic_and_every_relation_is_derived(tmp_path: Path) -> None:
    from selp.gen.explain import generate_explain

    program = analyze(parse_program_file(str(spec("explain").program)))
    generate_explain(tmp_path / "x", 150, seed=2)
    generate_explain(tmp_path / "y", 150, seed=2)
    assert (tmp_path / "x" / "link.csv").read_bytes() == (tmp_path / "y" / "link.csv").read_bytes()
    res = run_local(program, tmp_path / "x")
    assert all(res.count(rel) > 0 for rel in res.relations())
    # dist never exceeds the hop table: at most 4 hops
    assert max(n for _, _, n in res.rows("dist")) == 4


def test_scale_lands_near_the_output_size_for_every_dataset(tmp_path: Path) -> None:
    import pytest

    from selp.bench.datasets import NAMES, generate_scaled

    for name in NAMES:
        stats = generate_scaled(name, tmp_path / name, 20000, seed=3)  # another seed than the calibration's
        res = run_local(analyze(parse_program_file(str(spec(name).program))), tmp_path / name)
        out = sum(res.count(rel) for rel in res.relations())
        assert out == pytest.approx(20000, rel=0.15), name
        assert stats["scale"] == 20000 and stats["units"] > 1 and stats["edb_rows"] > 0


def test_scaled_dataset_is_cached_by_dataset_scale_and_seed(tmp_path: Path) -> None:
    from selp.bench.datasets import scaled_dataset

    d, stats = scaled_dataset(tmp_path, "iris", 2000, seed=1)
    mtime = (d / "a.csv").stat().st_mtime_ns
    d2, stats2 = scaled_dataset(tmp_path, "iris", 2000, seed=1)
    assert d2 == d and stats2 == stats and (d / "a.csv").stat().st_mtime_ns == mtime
    d3, _ = scaled_dataset(tmp_path, "iris", 2000, seed=2)
    assert d3 != d


def test_gen_cli_scale_and_units_options(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    def selp(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "selp", "gen", *args], capture_output=True, text=True)

    r = selp("explain", "--scale", "3000", "--seed", "4", "--out", str(tmp_path / "e"))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["unit"] == "agents" and (tmp_path / "e" / "link.csv").is_file()
    r = selp("amie", "--persons", "50", "--out", str(tmp_path / "a"))  # the unit option still works
    assert r.returncode == 0 and json.loads(r.stdout)["persons"] == 50
    r = selp("tc", "--scale", "2000", "--out", str(tmp_path / "t"))
    assert r.returncode == 0 and json.loads(r.stdout)["expected_tc"] == 2025
    r = selp("iris", "--out", str(tmp_path / "i"))
    assert r.returncode != 0 and "give either --scale or --records" in r.stderr
