"""The instrumentation benchmark: time and output size of Algorithm 1 for named patterns.

Instrumentation is static (no database), so this measures only the rewriting: for every bundled
program and each of its named patterns (``selp/bench/programs/<name>.patterns``), the median time of a few
runs with the section-4.1 optimisations on and off, and the size of the instrumented program.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

from selp.bench.datasets import SPECS, spec
from selp.bench.patterns import load_named_patterns
from selp.instrument.instrument import instrument
from selp.language import parse_program_file
from selp.language.pattern import CHILD, Pattern
from selp.language.pattern_parser import tree_patterns
from selp.language.validate import analyze

PROGRAMS = tuple(sorted(SPECS))  # every registered dataset, by name


def pattern_shape(pattern: Pattern) -> dict[str, int]:
    """Nodes, transitive edges and width (most children of one node) over a pattern's trees."""
    nodes = transitive = width = 0
    for tree in tree_patterns(pattern):
        for n in tree.root.nodes():
            nodes += 1
            width = max(width, len(n.children))
            transitive += sum(1 for edge, _ in n.children if edge != CHILD)
    return {"nodes": nodes, "transitive": transitive, "width": width}


def bench_instrument(programs: list[str] | None = None, repeat: int = 5, say: Callable[[str], None] = lambda m: None) -> list[dict[str, Any]]:
    """One row per (program, pattern): sizes and median seconds, optimised and not."""
    rows = []
    for name in programs or list(PROGRAMS):
        analysis = analyze(parse_program_file(str(spec(name).program)))
        for pname, (text, pattern) in load_named_patterns(spec(name).patterns).items():
            say(f"instrument {name} {pname}: {text}")
            row: dict[str, Any] = {"program": name, "pattern": pname, **pattern_shape(pattern), "rules_before": len(analysis.program.rules)}
            for optimize in (True, False):
                times = []
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    inst = instrument(analysis, pattern, optimize=optimize)
                    times.append(time.perf_counter() - t0)
                key = "opt" if optimize else "noopt"
                row[f"rules_{key}"] = len(inst.program.rules)
                row[f"relations_{key}"] = len(inst.program.relations())
                row[f"ms_{key}"] = round(statistics.median(times) * 1000, 2)
            rows.append(row)
    return rows


COLUMNS = [
    ("program", "program"),
    ("pattern", "pattern"),
    ("nodes", "nodes"),
    ("transitive", "// edges"),
    ("width", "width"),
    ("rules_before", "rules in P"),
    ("rules_opt", "rules in P_p"),
    ("rules_noopt", "unoptimised"),
    ("relations_opt", "relations"),
    ("ms_opt", "ms"),
    ("ms_noopt", "ms unoptimised"),
]


def format_instrument_table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of :func:`bench_instrument` rows."""
    head = [title for _, title in COLUMNS]
    body = [[str(r[key]) for key, _ in COLUMNS] for r in rows]
    widths = [max(len(c) for c in col) for col in zip(head, *body)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    return "\n".join([line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(b) for b in body])
