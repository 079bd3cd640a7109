"""What every benchmark records with its rows: the machine (:func:`machine_info`) and the
``results.csv`` / ``results.json`` files (:func:`write_results`).
"""

from __future__ import annotations

import csv
import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

from selp.outfile import open_output, write_text


def machine_info() -> dict[str, Any]:
    """Cores, memory and software versions, recorded with every result file."""
    info: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    try:
        with open("/proc/meminfo") as fh:
            kb = int(fh.readline().split()[1])
        info["mem_total_gib"] = round(kb / 1024**2, 1)
    except (OSError, ValueError, IndexError):
        pass
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        info["java"] = (out.stderr or out.stdout).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        info["java"] = None
    try:  # which code was measured: the commit, and whether the engines had uncommitted edits
        repo = Path(__file__).resolve().parents[2]
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True, timeout=30)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "selp"], cwd=repo, capture_output=True,
                               text=True, timeout=30)
        if head.returncode == 0:
            info["commit"] = head.stdout.strip() + (" (selp/ has uncommitted changes)" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        import pyspark

        info["pyspark"] = pyspark.__version__
    except ImportError:
        info["pyspark"] = None
    return info

def write_results(rows: list[dict[str, Any]], out_dir: str | Path, machine: dict[str, Any] | None = None) -> list[Path]:
    """Write ``results.csv`` and ``results.json`` (rows plus machine info and date) to ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    csv_path, json_path = out / "results.csv", out / "results.json"
    with open_output(csv_path, newline="") as fh:
        w = csv.writer(fh)
        w.writerow(keys)
        for r in rows:
            w.writerow([";".join(map(str, v)) if isinstance(v, list) else ("" if v is None else v) for v in (r.get(k) for k in keys)])
    doc = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "machine": machine if machine is not None else machine_info(),
        "rows": rows,
    }
    write_text(json_path, json.dumps(doc, indent=2) + "\n")
    return [csv_path, json_path]
