"""BDD provenance bytes per tuple after insert-all, depth-first against a random arrival order,
on the sensor grid (k = 10) and the transit-stub network (0 and 2 extra links per stub): counts,
not times, so any load will do. Run from a tree with PYTHONPATH pointing at it (run.sh)."""

import tempfile
from pathlib import Path

from selp.bench.maintain import PROGRAMS, generate
from selp.database import load_database
from selp.language import parse_program_file
from selp.language.validate import analyze
from selp.maintain.absorption import Absorption

for gen, prog, density in [("sensor-grid", "regions.dl", 10), ("transit-stub", "reachable.dl", 0), ("transit-stub", "reachable.dl", 2)]:
    data = Path(tempfile.mkdtemp())
    generate(gen, data, 0, density)
    analysis = analyze(parse_program_file(PROGRAMS / prog))
    base = {rel: set(fs) for rel, fs in load_database(analysis, data).facts.items() if rel in analysis.edb}
    got = [Absorption(analysis, base, formulas="bdd", order=order).provenance_stats()["provenance_bytes_per_tuple"] for order in ("dfs", "random")]
    print(f"{gen} {density}: dfs {got[0]:.1f} random {got[1]:.1f} B/tuple, dfs saves {100 * (1 - got[0] / got[1]):.0f} %", flush=True)
