"""``selp bench anchors``: selp's whole CLI processes beside DuckDB's recursive CTE and Nemo.

Anchors for the other benchmarks: the same transitive closure, on the same random directed
graph, computed in one run by

* **DuckDB's own recursive CTE** (``WITH RECURSIVE ... UNION ...``) over the CSV file, CSV load
  included, in a fresh Python process that imports only ``duckdb``;
* **Nemo** (``nemo-python``, module ``nmo_python``), if it is installed: the same two rules with a
  ``#count`` aggregate, in a fresh process ("skipped: not installed" otherwise; it is never a
  dependency of selp);
* **selp's engines as a user runs them**: ``selp eval tc.dl --db DIR --engine E -q`` for each
  engine of ``--engines``, and, on the default engine, ``selp topk ... --pattern 'path(*, *)' -k K
  --format summary`` for K = 1, 3, 7 and ``selp explain ... -k 3 'path(X, Y)'`` for the first path
  fact (smallest pair in the closure).

Every run is a whole process, timed start to exit (what a user waits: interpreter start,
imports, loading, evaluation, output), each in a fresh process. A small wrapper process
(``python -c _WRAPPER``) starts the command, times it and reports
``getrusage(RUSAGE_CHILDREN).ru_maxrss``, the peak RSS of the largest process it waited for; the
bench also samples the RSS summed over the wrapper's process tree every 0.1 s (a Spark JVM is a
separate process) and reports the larger of the two. A run past ``--timeout`` or past the memory
cap is killed with its process group and reported as ``timeout`` / ``memory cap``; the
configuration is then not repeated.

**Counts are checked, not only times.** Each row records the number of ``path`` tuples the system
reports (DuckDB and Nemo: ``count(*)``; ``selp eval``: its printed count; ``selp topk``: the facts
in its JSON answer, counted while the output streams through a pipe, never stored; ``selp
explain``: the trees printed for the one fact) and compares it with DuckDB's count; a difference is
a ``MISMATCH`` in the table, a warning on stderr, a list in ``results.json`` and exit code 1.

The graph (:mod:`selp.gen.anchors`): ``N`` nodes, ``3N`` distinct directed edges without
self-loops, weights uniform in [0.5, 1.0] with 3 decimals, from ``random.Random(seed)`` (seed 1): at
N = 1000 its closure has 873 168 path tuples (checked in the tests), at 3300 about 9.6 M.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from selp.bench.results import machine_info, write_results
from selp.gen.anchors import DEFAULT_SEED, generate_graph
from selp.outfile import write_text

KS = (1, 3, 7)
EXPLAIN_K = 3
DEFAULT_ENGINES = ("embedded", "reference")
# the results directory of a source checkout (the default of --out; recorded runs live there)
DEFAULT_OUT = Path(__file__).resolve().parents[2] / "datasets" / "results" / "anchors"
DEFAULT_MEMORY_CAP_MB = 12288.0
POLL_S = 0.1
TIMEOUT = "timeout"
MEMORY_CAP = "memory cap"
NOT_INSTALLED = "skipped: not installed"

Say = Callable[[str], None]

# DuckDB, the query as a user would write it: read_csv in both arms (CSV parsing included)
DUCKDB_SQL = (
    "WITH RECURSIVE path(x, y) AS ("
    "SELECT c1, c2 FROM read_csv('{csv}') "
    "UNION SELECT e.c1, p.y FROM read_csv('{csv}') e JOIN path p ON e.c2 = p.x"
    ") SELECT count(*) FROM path"
)
_DUCKDB_SCRIPT = """\
import sys
import duckdb
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
csv = sys.argv[1].replace("'", "''")
print(con.execute(sys.argv[2].format(csv=csv)).fetchall()[0][0])
"""

NEMO_PROGRAM = """\
@import edge :- csv{{resource="{csv}", format=(int, int, skip), ignore_headers=true}}.
path(?x, ?y) :- edge(?x, ?y).
path(?x, ?z) :- edge(?x, ?y), path(?y, ?z).
npath(#count(?x, ?y)) :- path(?x, ?y).
@output npath.
"""
_NEMO_SCRIPT = """\
import sys
import nmo_python
engine = nmo_python.NemoEngine(nmo_python.load_string(sys.argv[1]))
engine.reason()
print([list(row) for row in engine.result("npath")][0][0])
"""

# runs CMD (JSON argv[1]) as its child, then writes wall seconds and the children's rusage to argv[2]
_WRAPPER = """\
import json, resource, subprocess, sys, time
spec = json.loads(sys.argv[1])
t0 = time.perf_counter()
rc = subprocess.call(spec["cmd"], cwd=spec["cwd"])
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[2], "w") as fh:
    json.dump({"rc": rc, "wall": wall, "maxrss_kb": ru.ru_maxrss, "user": ru.ru_utime, "sys": ru.ru_stime}, fh)
"""


# --------------------------------------------------------------------------------------------
# one run: a whole process under the caps


@dataclass
class Config:
    """One command to time: ``system`` and ``what`` name the row."""

    system: str
    what: str
    cmd: list[str]
    parse: str  # count | eval | topk | explain
    k: int | None = None
    note: str = ""
    cmd_text: str = ""


class _StreamCounter:
    """Counts byte patterns in a stream (across chunk boundaries) and keeps its first bytes."""

    def __init__(self, patterns: dict[str, bytes], keep: int = 1 << 20) -> None:
        self.patterns = patterns
        self.counts = {k: 0 for k in patterns}
        self.overlap = max((len(p) for p in patterns.values()), default=1) - 1
        self.tail = b""
        self.head = bytearray()
        self.keep = keep
        self.nbytes = 0

    def feed(self, chunk: bytes) -> None:
        self.nbytes += len(chunk)
        if len(self.head) < self.keep:
            self.head += chunk[: self.keep - len(self.head)]
        if self.patterns:
            buf = self.tail + chunk
            for k, p in self.patterns.items():
                self.counts[k] += buf.count(p) - self.tail.count(p)
            self.tail = buf[-self.overlap:] if self.overlap else b""


def _tree_rss_mb(root: int) -> float:
    """RSS in MiB summed over ``root`` and its descendants (``/proc/PID/task/*/children``)."""
    total, todo, seen = 0.0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/statm") as fh:
                total += int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as fh:
                    todo += [int(c) for c in fh.read().split()]
        except (OSError, ValueError):
            continue
    return total


def run_once(cfg: Config, cwd: Path, timeout_s: float | None, memory_cap_mb: float | None,
             env: dict[str, str]) -> dict[str, Any]:
    """Run ``cfg.cmd`` once in a fresh wrapper process; wall seconds, peak RSS, output counts."""
    patterns: dict[str, bytes] = {}
    counter = _StreamCounter(patterns)
    with tempfile.TemporaryDirectory(prefix="selp-anchor-") as tmp:
        result_file = Path(tmp) / "rusage.json"
        err_path = Path(tmp) / "stderr"
        with open(err_path, "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-c", _WRAPPER, json.dumps({"cmd": cfg.cmd, "cwd": str(cwd)}), str(result_file)],
                stdout=subprocess.PIPE, stderr=err, env=env, start_new_session=True)

            def pump() -> None:
                assert proc.stdout is not None
                while True:
                    chunk = proc.stdout.read1(1 << 20)
                    if not chunk:
                        break
                    counter.feed(chunk)

            reader = threading.Thread(target=pump, daemon=True)
            reader.start()
            t0 = time.monotonic()
            status, sampled_peak = "ok", 0.0
            while proc.poll() is None:
                sampled_peak = max(sampled_peak, _tree_rss_mb(proc.pid))
                if memory_cap_mb and sampled_peak > memory_cap_mb:
                    status = MEMORY_CAP
                elif timeout_s and time.monotonic() - t0 > timeout_s:
                    status = TIMEOUT
                if status != "ok":
                    try:  # our own child's process group (its session): the command and its JVM
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    break
                try:
                    proc.wait(timeout=POLL_S)
                except subprocess.TimeoutExpired:
                    pass
            proc.wait()
            outer_wall = time.monotonic() - t0
            reader.join(timeout=30)
        usage = json.loads(result_file.read_text()) if result_file.exists() else {}
        stderr_tail = [ln for ln in err_path.read_text(errors="replace").splitlines() if ln.strip()][-3:]
    run: dict[str, Any] = {"status": status, "stdout_bytes": counter.nbytes}
    peak = max(sampled_peak, usage.get("maxrss_kb", 0) / 1024)
    run["peak_rss_mb"] = round(peak, 1) if peak else None
    if status != "ok":
        run["seconds"] = round(outer_wall, 3)
        return run
    run["seconds"] = round(usage.get("wall", outer_wall), 3)
    run["cpu_seconds"] = round(usage.get("user", 0) + usage.get("sys", 0), 3) if usage else None
    rc = usage.get("rc", proc.returncode)
    if rc != 0:
        run["status"] = f"error: {stderr_tail[-1][:200] if stderr_tail else f'exit code {rc}'}"
        if rc < 0 or rc == 137:
            run["status"] += f" (exit code {rc})"
        return run
    _parse_output(cfg, counter, run)
    return run


def _parse_output(cfg: Config, counter: _StreamCounter, run: dict[str, Any]) -> None:
    text = counter.head.decode("utf-8", errors="replace")
    if cfg.parse == "count":
        try:
            run["path_count"] = int(text.strip().splitlines()[-1])
        except (ValueError, IndexError):
            run["status"] = f"error: unexpected output {text[:80]!r}"
    elif cfg.parse == "eval":
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "path" and parts[1].isdigit():
                run["path_count"] = int(parts[1])
        if "path_count" not in run:
            run["status"] = f"error: no 'path N' line in {text[:80]!r}"
    elif cfg.parse == "topk":
        # "path: 873168 fact(s), 2619436 tree(s); best weight ..., worst top-1 weight ..."
        m = re.match(r"path: (\d+) fact\(s\), (\d+) tree\(s\)", text.strip())
        if m:
            run["path_count"], run["trees"] = int(m.group(1)), int(m.group(2))
        else:
            run["status"] = f"error: no summary line in {text[:80]!r}"
    elif cfg.parse == "explain":
        run["trees"] = sum(1 for line in text.splitlines() if line.lstrip().startswith("#") and "weight" in line)
        run["explained"] = text.splitlines()[0].strip() if text.strip() else ""


def run_config(cfg: Config, cwd: Path, repeat: int, warmup: int, timeout_s: float | None,
               memory_cap_mb: float | None, env: dict[str, str], say: Say, label: str) -> dict[str, Any]:
    """``warmup`` untimed then ``repeat`` timed runs (stopping at the first failure); the medians."""
    runs: list[dict[str, Any]] = []
    for i in range(warmup + repeat):
        r = run_once(cfg, cwd, timeout_s, memory_cap_mb, env)
        r["warmup"] = i < warmup
        runs.append(r)
        tag = "warm-up" if r["warmup"] else f"run {i - warmup + 1}/{repeat}"
        extra = f", path {r['path_count']:,}" if r.get("path_count") is not None else ""
        extra += f", {r['trees']} trees" if r.get("trees") is not None else ""
        mem = f"{r['peak_rss_mb']:.0f} MiB" if r.get("peak_rss_mb") else "? MiB"
        say(f"{label} {cfg.system} {cfg.what} {tag}: {r['seconds']:.2f} s, {mem}{extra} [{r['status']}]")
        if r["status"] != "ok":
            break
    timed = [r for r in runs if not r["warmup"] and r["status"] == "ok"]
    failed = next((r for r in runs if r["status"] != "ok"), None)
    row: dict[str, Any] = {"status": failed["status"] if failed else "ok", "repeats": len(timed)}
    if timed and not failed:
        row["seconds"] = round(statistics.median(r["seconds"] for r in timed), 3)
        row["seconds_all"] = [r["seconds"] for r in timed]
        row["cpu_seconds"] = statistics.median(r["cpu_seconds"] for r in timed) if all(r.get("cpu_seconds") is not None for r in timed) else None
    elif failed:
        row["seconds"] = None
        row["seconds_all"] = [r["seconds"] for r in runs if not r["warmup"]]
    peaks = [r["peak_rss_mb"] for r in runs if r.get("peak_rss_mb")]
    row["peak_rss_mb"] = max(peaks) if peaks else None
    last = (timed or runs)[-1]
    for key in ("path_count", "trees", "explained", "stdout_bytes"):
        if key in last:
            row[key] = last[key]
    return row


# --------------------------------------------------------------------------------------------
# the benchmark


def _selp_cmd() -> list[str]:
    """The ``selp`` console script next to this interpreter, else ``python -m selp``."""
    exe = Path(sys.executable).parent / "selp"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("selp")
    return [found] if found else [sys.executable, "-m", "selp"]


def nemo_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("nmo_python") is not None


def default_engine() -> str:
    from selp.config import DEFAULT_ENGINE

    return DEFAULT_ENGINE


def configs_for(work: Path, stats: dict[str, Any], engines: list[str], skip_topk: bool) -> list[Config]:
    csv = str((work / "db" / "edge.csv").resolve())
    selp = _selp_cmd()
    prog, db = "tc.dl", "db"
    out = [
        Config("DuckDB", "recursive CTE", [sys.executable, "-c", _DUCKDB_SCRIPT, csv, DUCKDB_SQL], "count",
               cmd_text="python -c 'duckdb: " + DUCKDB_SQL.format(csv="edge.csv") + "'"),
        Config("Nemo", "rules + #count", [sys.executable, "-c", _NEMO_SCRIPT, NEMO_PROGRAM.format(csv=csv)], "count",
               cmd_text="python -c 'nmo_python: NemoEngine(load_string(program)).reason()'"),
    ]
    for e in engines:
        out.append(Config(f"selp {e}", "eval", selp + ["eval", prog, "--db", db, "--engine", e, "-q"], "eval",
                          cmd_text=f"selp eval tc.dl --db DIR --engine {e} -q"))
    if not skip_topk:
        dflt = default_engine()
        for k in KS:
            # --format summary: the k best trees of every fact computed, counted per relation, not
            # drawn (drawing 873k trees is gigabytes of JSON: that measures printing, not top-k)
            out.append(Config(f"selp {dflt}", f"topk k={k}", selp + ["topk", prog, "--db", db, "-k", str(k), "--pattern",
                              "path(*, *)", "-q", "--format", "summary"], "topk", k=k,
                              cmd_text=f"selp topk tc.dl --db DIR -k {k} --pattern 'path(*, *)' -q --format summary"))
        fact = stats["explain_fact"]
        out.append(Config(f"selp {dflt}", "explain k=3", selp + ["explain", prog, "--db", db, "-k", str(EXPLAIN_K), fact, "-q"],
                          "explain", k=EXPLAIN_K, note=fact,
                          cmd_text=f"selp explain tc.dl --db DIR -k {EXPLAIN_K} '{fact}' -q"))
    return out


def check_counts(rows: list[dict[str, Any]]) -> list[str]:
    """Compare each row's path count with DuckDB's (or, without it, the first one reported) at the
    same N; set ``count_check`` and return the mismatches as sentences."""
    problems: list[str] = []
    for n in dict.fromkeys(r["nodes"] for r in rows):
        group = [r for r in rows if r["nodes"] == n]
        duck = next((r for r in group if r["system"] == "DuckDB" and r.get("path_count") is not None), None)
        ref = duck or next((r for r in group if r.get("path_count") is not None and r["what"] != "explain k=3"), None)
        expected = ref["path_count"] if ref else None
        source = ref["system"] if ref else None
        for r in group:
            r["expected_path_count"] = expected
            if r["what"].startswith("explain"):
                trees = r.get("trees")
                if r["status"] != "ok" or trees is None:
                    r["count_check"] = ""
                elif 1 <= trees <= (r.get("k") or EXPLAIN_K) and r.get("explained") == r.get("note"):
                    r["count_check"] = f"ok ({trees} trees)"
                else:
                    r["count_check"] = f"MISMATCH: {trees} trees for {r.get('explained')!r}"
                    problems.append(f"N={n}: {r['system']} {r['what']} printed {trees} trees for {r.get('explained')!r}, "
                                    f"expected 1..{r.get('k')} for {r.get('note')} (a fact of the closure)")
                continue
            got = r.get("path_count")
            if got is None or expected is None:
                r["count_check"] = "" if got is None else "unchecked"
            elif got == expected:
                r["count_check"] = "ok"
            else:
                r["count_check"] = f"MISMATCH ({source}: {expected})"
                problems.append(f"N={n}: {r['system']} {r['what']} reports {got} path tuples, {source} {expected}")
            if r["what"].startswith("topk") and r.get("trees") is not None and got and r["status"] == "ok":
                if not got <= r["trees"] <= got * (r.get("k") or 1):
                    r["count_check"] += f"; MISMATCH: {r['trees']} trees for {got} facts"
                    problems.append(f"N={n}: {r['what']} printed {r['trees']} trees for {got} facts (k={r.get('k')})")
    return problems


def add_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per row ``vs_duckdb``; per N, the summary ratios (one dict per N)."""
    summary = []
    dflt = default_engine()
    for n in dict.fromkeys(r["nodes"] for r in rows):
        group = {(r["system"], r["what"]): r for r in rows if r["nodes"] == n}

        def sec(system: str, what: str) -> float | None:
            r = group.get((system, what))
            return r.get("seconds") if r and r["status"] == "ok" else None

        def ratio(a: float | None, b: float | None) -> float | None:
            return round(a / b, 2) if a is not None and b else None

        duck = sec("DuckDB", "recursive CTE")
        for r in group.values():
            r["vs_duckdb"] = ratio(r.get("seconds") if r["status"] == "ok" else None, duck)
        ev = sec(f"selp {dflt}", "eval")
        top1 = sec(f"selp {dflt}", "topk k=1")
        any_row = next(iter(group.values()))
        summary.append({
            "nodes": n, "edges": any_row["edges"], "path_tuples": any_row.get("expected_path_count"),
            "duckdb_seconds": duck, "embedded_eval_seconds": sec("selp embedded", "eval"),
            "embedded_eval_vs_duckdb": ratio(sec("selp embedded", "eval"), duck),
            "top1_vs_eval": ratio(top1, ev), "top3_vs_eval": ratio(sec(f"selp {dflt}", "topk k=3"), ev),
            "top7_vs_top1": ratio(sec(f"selp {dflt}", "topk k=7"), top1),
            "explain_seconds": sec(f"selp {dflt}", "explain k=3"),
        })
    return summary


def machine() -> dict[str, Any]:
    info = machine_info()
    try:
        with open("/proc/cpuinfo") as fh:
            info["cpu"] = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), None)
    except OSError:
        info["cpu"] = None
    info["python_implementation"] = platform.python_implementation()
    from importlib.metadata import PackageNotFoundError, version

    for dist, key in (("duckdb", "duckdb"), ("nemo-python", "nemo_python")):
        try:
            info[key] = version(dist)
        except PackageNotFoundError:
            info[key] = None
    info["loadavg_at_start"] = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    return info


def _check_engines(engines: list[str]) -> None:
    """Refuse a name the engine registry does not know (the engines of ``selp eval``)."""
    from selp.engines.registry import names

    known = sorted(names(with_aliases=False))
    for e in engines:
        if e not in known:
            raise ValueError(f"--engines: unknown engine {e!r} (choose {', '.join(known)})")


def bench_anchors(nodes: list[int], engines: list[str], repeat: int = 3, warmup: int = 0, timeout_s: float | None = 600,
                  memory_cap_mb: float | None = DEFAULT_MEMORY_CAP_MB, skip_topk: bool = False, seed: int = DEFAULT_SEED,
                  workdir: str | Path | None = None, say: Say = lambda m: None) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """Run every configuration for every N; ``(rows, summary, mismatches)``."""
    _check_engines(engines)
    env = {k: v for k, v in os.environ.items() if k != "SELP_ENGINE"}  # topk/explain: the default engine
    env["PYTHONHASHSEED"] = "0"
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="selp-anchors-"))
    rows: list[dict[str, Any]] = []
    have_nemo = nemo_available()
    try:
        for n in nodes:
            work = base / f"n{n}"
            stats = generate_graph(n, work, seed)
            say(f"N={n}: {stats['edges']} edges (sha256 {stats['edge_csv_sha256'][:12]}), explain fact {stats['explain_fact']}")
            for cfg in configs_for(work, stats, engines, skip_topk):
                row: dict[str, Any] = {"nodes": n, "edges": stats["edges"], "system": cfg.system, "what": cfg.what,
                                       "k": cfg.k, "note": cfg.note, "command": cfg.cmd_text}
                if cfg.system == "Nemo" and not have_nemo:
                    row.update(status=NOT_INSTALLED, repeats=0, seconds=None, peak_rss_mb=None)
                    say(f"N={n} Nemo: {NOT_INSTALLED} (pip install nemo-python)")
                else:
                    row.update(run_config(cfg, work, repeat, warmup, timeout_s, memory_cap_mb, env, say, f"N={n}"))
                row["edge_csv_sha256"] = stats["edge_csv_sha256"]
                rows.append(row)
    finally:
        if not workdir:
            shutil.rmtree(base, ignore_errors=True)
    problems = check_counts(rows)
    summary = add_ratios(rows)
    return rows, summary, problems


# --------------------------------------------------------------------------------------------
# reporting

ROW_COLUMNS = [
    ("nodes", "N"), ("edges", "edges"), ("system", "system"), ("what", "run"), ("seconds", "wall s"),
    ("repeats", "runs"), ("peak_rss_mb", "peak RSS MiB"), ("vs_duckdb", "/ DuckDB"), ("path_count", "path tuples"),
    ("count_check", "count check"), ("status", "status"),
]
SUMMARY_COLUMNS = [
    ("nodes", "N"), ("path_tuples", "path tuples"), ("duckdb_seconds", "DuckDB CTE s"),
    ("embedded_eval_seconds", "embedded eval s"), ("embedded_eval_vs_duckdb", "embedded eval / DuckDB CTE"),
    ("top1_vs_eval", "top-1 / eval"), ("top3_vs_eval", "top-3 / eval"), ("top7_vs_top1", "top-7 / top-1"),
    ("explain_seconds", "explain s"),
]
_RIGHT = {"nodes", "edges", "seconds", "repeats", "peak_rss_mb", "vs_duckdb", "path_count", "path_tuples",
          "duckdb_seconds", "embedded_eval_seconds", "embedded_eval_vs_duckdb", "top1_vs_eval", "top3_vs_eval",
          "top7_vs_top1", "explain_seconds"}


def _fmt(key: str, v: Any) -> str:
    if v is None:
        return ""
    if key in ("nodes", "edges", "path_count", "path_tuples") and isinstance(v, int):
        return f"{v:,}".replace(",", " ")
    if key == "peak_rss_mb":
        return f"{v:.0f}"
    if key.endswith("seconds") or key == "seconds":
        return f"{v:.3f}" if v < 1 else f"{v:.2f}" if v < 100 else f"{v:.0f}"
    return str(v)


def _cell(key: str, r: dict[str, Any]) -> str:
    v = r.get(key)
    if key == "status" and v not in ("ok", None) and r.get("seconds_all"):  # a cap: when it stopped
        return f"{v} after {_fmt('seconds', r['seconds_all'][-1])} s"
    return _fmt(key, v)


def markdown_table(rows: list[dict[str, Any]], columns: list[tuple[str, str]]) -> str:
    head = [t for _, t in columns]
    body = [[_cell(k, r).replace("|", "\\|") for k, _ in columns] for r in rows]
    widths = [max(len(c) for c in col) for col in zip(head, *body)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.rjust(w) if k in _RIGHT else c.ljust(w) for c, w, (k, _) in zip(cells, widths, columns)) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if k in _RIGHT else "-" * (w + 2) for w, (k, _) in zip(widths, columns)) + "|"
    return "\n".join([line(head), rule] + [line(b) for b in body])


def format_report(rows: list[dict[str, Any]], summary: list[dict[str, Any]], info: dict[str, Any],
                  command: str | None, problems: list[str]) -> str:
    """The README-ready Markdown: machine, command line, the runs, the ratios, any mismatch."""
    mem = f"{info.get('mem_total_gib')} GiB RAM" if info.get("mem_total_gib") else "RAM unknown"
    lines = [
        f"`{command}`" if command else "(called from Python)",
        "",
        f"Machine: {info.get('nproc')} CPUs ({info.get('cpu') or 'unknown CPU'}), {mem}, {info.get('platform')}; "
        f"Python {info.get('python')}, DuckDB {info.get('duckdb')}, nemo-python {info.get('nemo_python') or 'not installed'}; "
        f"{info.get('date')}, commit {info.get('commit')}, load average at start {info.get('loadavg_at_start')}.",
        "",
        "Whole processes, start to exit (median of the timed runs); peak RSS of the process tree;"
        " path tuples as each system reports them, checked against DuckDB.",
        "",
        markdown_table(rows, ROW_COLUMNS),
        "",
        markdown_table(summary, SUMMARY_COLUMNS),
    ]
    if problems:
        lines += ["", "**COUNT MISMATCH:**", ""] + [f"* {p}" for p in problems]
    return "\n".join(lines) + "\n"


def rerender(out_dir: str | Path) -> str:
    """``table.md`` again from ``results.json`` (after a change of format, without re-running)."""
    doc = json.loads((Path(out_dir) / "results.json").read_text(encoding="utf-8"))
    info = dict(doc["machine"], date=doc["machine"].get("date") or doc.get("date"))
    text = format_report(doc["rows"], doc["summary"], info, info.get("command"), doc.get("count_mismatches", []))
    write_text(Path(out_dir) / "table.md", text)
    return text


def save(rows: list[dict[str, Any]], summary: list[dict[str, Any]], info: dict[str, Any], command: str | None,
         problems: list[str], out_dir: str | Path) -> list[Path]:
    """``results.csv``, ``results.json`` (rows, summary, machine, command, mismatches), ``table.md``."""
    info = dict(info)
    if command:
        info["command"] = command
    paths = write_results(rows, out_dir, info)
    json_path = Path(out_dir) / "results.json"
    doc = json.loads(json_path.read_text(encoding="utf-8"))
    doc["summary"] = summary
    doc["count_mismatches"] = problems
    write_text(json_path, json.dumps(doc, indent=2) + "\n")
    table = Path(out_dir) / "table.md"
    write_text(table, format_report(rows, summary, info, command, problems))
    return paths + [table]


def parse_list(text: str | None, option: str, default: list[Any], kind: type = int) -> list[Any]:
    if not text:
        return list(default)
    try:
        values = [kind(x.strip()) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"{option} expects a comma-separated list, got {text!r}") from None
    return values or list(default)


def cli(nodes: str | None, engines: tuple[str, ...], repeat: int, warmup: int, timeout_s: float,
        memory_cap_mb: float | None, skip_topk: bool, seed: int, out_dir: str | Path, command: str | None,
        say: Say, echo: Callable[[str], None]) -> list[str]:
    """``selp bench anchors``: run, print the report, write the files; the mismatches."""
    node_list = parse_list(nodes, "--nodes", [1000])
    if min(node_list) < 4:
        raise ValueError(f"--nodes expects integers >= 4, got {nodes!r}")
    engine_list = [e.strip() for e in ",".join(engines).split(",") if e.strip()] or list(DEFAULT_ENGINES)
    from selp.engines.registry import ALIASES

    engine_list = list(dict.fromkeys(ALIASES.get(e, e) for e in engine_list))
    _check_engines(engine_list)
    info = machine()
    say(f"machine: {info.get('nproc')} CPUs, {info.get('mem_total_gib')} GiB, load average {info['loadavg_at_start']};"
        f" nemo-python {'installed' if nemo_available() else 'not installed'}")
    rows, summary, problems = bench_anchors(node_list, engine_list, repeat, warmup, timeout_s, memory_cap_mb,
                                            skip_topk, seed, say=say)
    info["date"] = time.strftime("%Y-%m-%d %H:%M:%S %z")
    echo(format_report(rows, summary, info, command, problems).rstrip("\n"))
    for p in save(rows, summary, info, command, problems, out_dir):
        say(f"wrote {p}")
    for p in problems:
        say(f"COUNT MISMATCH: {p}")
    return problems
