"""The benchmark datasets, one registry entry each: program, named patterns, and a generator
sized by **scale** (approximate output tuples of the program, every IDB relation counted).

An entry (:class:`DatasetSpec` in :data:`SPECS`) names the dataset's generator module in
:mod:`selp.gen` (its ``GENERATOR_VERSION`` and a function ``(out_dir, units, seed) -> stats``), and
its program and patterns are the package files ``selp/bench/programs/<name>.dl`` and
``<name>.patterns``: adding a dataset is a generator module, those two files and one entry here.

Each generator has its own natural unit (IRIS records, AMIE persons, EXPLAIN agents; TC is sized
exactly by :func:`selp.gen.tc.tc_size_for`). The output per unit was measured once with the local
engine at seed 0 (the ``calibration`` of each entry) and :func:`units_for_scale` interpolates those
measurements on a log-log scale (extrapolating the last segment), so ``--scale 100000`` lands
within a few percent of 100 000 output tuples for any seed. AMIE's output grows slightly faster
than linearly (Zipf degrees: popular places and persons get more links as the base grows), which
a single facts-per-unit ratio would miss; the interpolation follows the measured curve.

Generated data is cached: :func:`scaled_dataset` writes into ``workdir/<dataset>_s<scale>_seed<seed>``
and reuses it when its ``dataset.json`` says it was made by the same generator version with the
same parameters.
"""

from __future__ import annotations

import atexit
import importlib
import json
import math
from contextlib import ExitStack
from dataclasses import dataclass
from functools import cache
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any, Callable

from selp.errors import SelpError
from selp.outfile import write_text

STATS = "dataset.json"
# files extracted from a zipped install stay until the interpreter exits
_EXTRACTED = ExitStack()
atexit.register(_EXTRACTED.close)


@cache
def bundled(filename: str) -> Path:
    """A file of ``selp/bench/programs/`` (the bundled programs and pattern files) as a path.

    Read through :mod:`importlib.resources`, so it is found in an installed package too; a real
    file is needed because parse errors name it and the benchmark's workers open it."""
    resource = files("selp.bench").joinpath("programs", filename)
    if not resource.is_file():
        raise SelpError(f"no bundled file {filename!r} in selp/bench/programs")
    return _EXTRACTED.enter_context(as_file(resource))


@dataclass(frozen=True)
class DatasetSpec:
    """A benchmark dataset: its generator, its program and named patterns, and how ``--scale``
    maps onto the generator's unit."""

    name: str
    unit: str  # what the generator counts ("records", "persons", "agents"; "target" for tc)
    generator: str  # "module:function" of selp.gen, called as function(out_dir, units, seed)
    calibration: tuple[tuple[int, int], ...]  # measured (units, output tuples), seed 0, local engine
    default_scales: tuple[int, ...]
    min_units: int = 2
    exact: bool = False  # the unit is the output size itself (tc: sized exactly by the generator)

    @property
    def program(self) -> Path:
        """The bundled program ``<name>.dl``."""
        return bundled(f"{self.name}.dl")

    @property
    def patterns(self) -> Path:
        """The bundled named patterns ``<name>.patterns``."""
        return bundled(f"{self.name}.patterns")

    def generate(self) -> Callable[[Path, int, int], dict[str, Any]]:
        """The generator function (imported on first use: the command line stays light)."""
        module, function = self.generator.split(":")
        return getattr(importlib.import_module(module), function)

    @property
    def version(self) -> int:
        """The generator's version (bumped when its output for given parameters changes)."""
        return importlib.import_module(self.generator.split(":")[0]).GENERATOR_VERSION


# Measured 2026-11-22 with `selp eval --engine local`, seed 0 (sum of every IDB relation's tuples).
SPECS: dict[str, DatasetSpec] = {
    "iris": DatasetSpec("iris", "records", "selp.gen.iris:generate_iris", (
        (100, 4_350), (300, 12_385), (1_000, 43_689), (3_000, 129_969), (10_000, 437_062),
    ), (10_000, 50_000, 200_000)),
    "amie": DatasetSpec("amie", "persons", "selp.gen.amie:generate_amie", (
        (100, 816), (300, 2_482), (1_000, 9_039), (3_000, 32_285), (10_000, 112_176), (30_000, 371_011),
        (50_000, 642_684),
    ), (10_000, 50_000, 200_000)),
    "explain": DatasetSpec("explain", "agents", "selp.gen.explain:generate_explain", (
        (100, 8_432), (300, 23_310), (1_000, 75_476), (3_000, 254_125), (10_000, 801_557),
    ), (10_000, 50_000, 200_000)),
    "tc": DatasetSpec("tc", "target", "selp.gen.tc:generate_tc_for", ((4, 4), (1_000_000, 1_000_000)),
                      (100_000, 300_000, 1_000_000), 4, exact=True),
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
    if s.exact:
        return max(s.min_units, scale)
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
    if s.exact:
        return units
    pts = s.calibration
    i = 0
    while i < len(pts) - 2 and units > pts[i + 1][0]:
        i += 1
    (u0, o0), (u1, o1) = pts[i], pts[i + 1]
    slope = math.log(o1 / o0) / math.log(u1 / u0)
    return round(o0 * (units / u0) ** slope)


def generate_units(name: str, out_dir: str | Path, units: int, seed: int = 0) -> dict[str, Any]:
    """Generate ``name`` by its generator's own unit (IRIS records, AMIE persons, EXPLAIN
    agents) into ``out_dir``; the generator's statistics."""
    return spec(name).generate()(Path(out_dir), units, seed)


def generator_version(name: str) -> int:
    """The generator's version (bumped when its output for given parameters changes)."""
    return spec(name).version


def generate_scaled(name: str, out_dir: str | Path, scale: int, seed: int = 0) -> dict[str, Any]:
    """Generate ``name`` for about ``scale`` output tuples into ``out_dir``; its statistics.

    The statistics include ``scale``, ``units`` (and what they count), ``edb_rows`` and
    ``expected_output`` (exact for tc, calibrated otherwise)."""
    units = units_for_scale(name, scale)
    s = spec(name)
    stats = s.generate()(Path(out_dir), units, seed)
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
    write_text(d / STATS, json.dumps(stats, indent=2) + "\n")
