"""The four benchmark datasets behind one interface: program, named patterns, and a generator
sized by **scale** (approximate output tuples of the program, every IDB relation counted).

Each generator has its own natural unit (IRIS records, AMIE persons, EXPLAIN agents; TC is sized
exactly by :func:`selp.bench.tc_size_for`). The output per unit was measured once with the local
engine at seed 0 (the ``CALIBRATION`` tables below) and :func:`units_for_scale` interpolates those
measurements on a log-log scale (extrapolating the last segment), so ``--scale 100000`` lands
within a few percent of 100 000 output tuples for any seed. AMIE's output grows slightly faster
than linearly (Zipf degrees: popular places and persons get more links as the base grows), which
a single facts-per-unit ratio would miss; the interpolation follows the measured curve.

Generated data is cached: :func:`scaled_dataset` writes into ``workdir/<dataset>_s<scale>_seed<seed>``
and reuses it when its ``dataset.json`` says it was made by the same generator version with the
same parameters.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from selp.errors import SelpError

DATASETS_DIR = Path(__file__).resolve().parents[1] / "datasets"
STATS = "dataset.json"


@dataclass(frozen=True)
class DatasetSpec:
    """A benchmark dataset: its program, its named patterns and how to generate it."""

    name: str
    unit: str  # what the generator counts ("records", "persons", "agents"; "target" for tc)
    calibration: tuple[tuple[int, int], ...]  # measured (units, output tuples), seed 0, local engine
    default_scales: tuple[int, ...]
    min_units: int = 2

    @property
    def program(self) -> Path:
        return DATASETS_DIR / f"{self.name}.dl"

    @property
    def patterns(self) -> Path:
        return DATASETS_DIR / f"{self.name}.patterns"


# Measured 2026-11-22 with `selp eval --engine local`, seed 0 (sum of every IDB relation's tuples).
SPECS: dict[str, DatasetSpec] = {
    "iris": DatasetSpec("iris", "records", (
        (100, 4_350), (300, 12_385), (1_000, 43_689), (3_000, 129_969), (10_000, 437_062),
    ), (10_000, 50_000, 200_000)),
    "amie": DatasetSpec("amie", "persons", (
        (100, 816), (300, 2_482), (1_000, 9_039), (3_000, 32_285), (10_000, 112_176), (30_000, 371_011),
        (50_000, 642_684),
    ), (10_000, 50_000, 200_000)),
    "explain": DatasetSpec("explain", "agents", (
        (100, 8_432), (300, 23_310), (1_000, 75_476), (3_000, 254_125), (10_000, 801_557),
    ), (10_000, 50_000, 200_000)),
    "tc": DatasetSpec("tc", "target", ((4, 4), (1_000_000, 1_000_000)), (100_000, 300_000, 1_000_000), 4),
}
NAMES = tuple(SPECS)


def spec(name: str) -> DatasetSpec:
    """The dataset called ``name``, or a one-line error naming the known ones."""
    try:
        return SPECS[name]
    except KeyError:
        raise SelpError(f"unknown dataset {name!r} (choose {', '.join(NAMES)})") from None


def units_for_scale(name: str, scale: int) -> int:
    """Generator units (records, persons, agents; tc: the target itself) for about ``scale``
    output tuples, by log-log interpolation of the measured calibration points."""
    s = spec(name)
    if scale < 1:
        raise SelpError(f"scale must be positive, got {scale}")
    if name == "tc":
        return max(4, scale)
    pts = s.calibration
    # the segment whose output range holds the scale (the first or last one to extrapolate)
    i = 0
    while i < len(pts) - 2 and scale > pts[i + 1][1]:
        i += 1
    (u0, o0), (u1, o1) = pts[i], pts[i + 1]
    slope = math.log(u1 / u0) / math.log(o1 / o0)
    units = u0 * (scale / o0) ** slope
    return max(s.min_units, round(units))


def expected_output(name: str, units: int) -> int:
    """The calibrated output size for ``units`` (the inverse of :func:`units_for_scale`)."""
    s = spec(name)
    if name == "tc":
        return units
    pts = s.calibration
    i = 0
    while i < len(pts) - 2 and units > pts[i + 1][0]:
        i += 1
    (u0, o0), (u1, o1) = pts[i], pts[i + 1]
    slope = math.log(o1 / o0) / math.log(u1 / u0)
    return round(o0 * (units / u0) ** slope)


def _generator(name: str) -> Callable[[Path, int, int], dict[str, Any]]:
    if name == "iris":
        from selp.gen.iris import generate_iris

        return generate_iris
    if name == "amie":
        from selp.gen.amie import generate_amie

        return generate_amie
    if name == "explain":
        from selp.gen.explain import generate_explain

        return generate_explain
    from selp.bench import generate_tc, tc_size_for

    def gen_tc(out: Path, target: int, seed: int) -> dict[str, Any]:
        nodes, edges, k = tc_size_for(target)
        stats = generate_tc(out, nodes, edges, seed, components=k)
        return {**stats, "edb_rows": stats["edge_rows"], "output_tuples": stats["expected_tc"]}

    return gen_tc


def generate_units(name: str, out_dir: str | Path, units: int, seed: int = 0) -> dict[str, Any]:
    """Generate ``name`` by its generator's own unit (IRIS records, AMIE persons, EXPLAIN
    agents) into ``out_dir``; the generator's statistics."""
    return _generator(name)(Path(out_dir), units, seed)


def generator_version(name: str) -> int:
    """The generator's version (bumped when its output for given parameters changes)."""
    if name == "tc":
        from selp.bench import GENERATOR_VERSION
    elif name == "iris":
        from selp.gen.iris import GENERATOR_VERSION
    elif name == "amie":
        from selp.gen.amie import GENERATOR_VERSION
    else:
        from selp.gen.explain import GENERATOR_VERSION
    return GENERATOR_VERSION


def generate_scaled(name: str, out_dir: str | Path, scale: int, seed: int = 0) -> dict[str, Any]:
    """Generate ``name`` for about ``scale`` output tuples into ``out_dir``; its statistics.

    The statistics include ``scale``, ``units`` (and what they count), ``edb_rows`` and
    ``expected_output`` (exact for tc, calibrated otherwise)."""
    units = units_for_scale(name, scale)
    stats = _generator(name)(Path(out_dir), units, seed)
    s = spec(name)
    out = {"dataset": name, "scale": scale, "units": units, "unit": s.unit, "seed": seed,
           "generator_version": generator_version(name), **{k: v for k, v in stats.items() if k not in ("seed",)}}
    out["expected_output"] = stats.get("expected_tc", expected_output(name, units))
    return out


def scaled_dataset(workdir: str | Path, name: str, scale: int, seed: int = 0) -> tuple[Path, dict[str, Any]]:
    """The dataset for ``scale`` under ``workdir``, generated once and then reused."""
    d = Path(workdir) / f"{name}_s{scale}_seed{seed}"
    path = d / STATS
    if path.is_file():
        try:
            stats = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            stats = {}
        if (stats.get("generator_version"), stats.get("units"), stats.get("seed")) == (
            generator_version(name), units_for_scale(name, scale), seed
        ):
            return d, stats
    d.mkdir(parents=True, exist_ok=True)
    stats = generate_scaled(name, d, scale, seed)
    save_stats(d, stats)  # written last: its presence marks a complete dataset
    return d, stats


def save_stats(d: Path, stats: dict[str, Any]) -> None:
    """Write ``dataset.json`` atomically (also used to record the measured output size)."""
    tmp = d / f".{STATS}.tmp-{os.getpid()}"
    tmp.write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, d / STATS)
