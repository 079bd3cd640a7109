"""``selp bench DATASET``: semi-naive evaluation vs selective top-k vs full provenance.

The paper's section 6 setting (Figures 5 and 6). For each scale the dataset is generated (and
cached, :mod:`selp.bench.datasets`); then, per engine, every configuration runs once untimed
(warm-up) and ``repeat`` times timed, and the median is reported:

* ``semi-naive`` — plain evaluation of the program (every IDB relation), no provenance;
* ``top-k`` — selective provenance: instrumentation plus the top-k DTable, per pattern and k;
* ``full-provenance`` — the baseline of :mod:`selp.bench.fullprov`: materialise every rule instance,
  then answer the same query from them (per pattern, at one k: Figure 5's, 3 when asked for).

What is timed: the computation after the database is loaded (loading is the same for all
three and is excluded; instrumentation is inside ``top-k`` and ``full-provenance``). On Spark,
the engines load inside their calls; their own ``load_seconds`` is subtracted.

**Caps.** ``timeout_s`` caps each run (the warm-up and every timed run; a configuration stops at
its first run past the cap). ``memory_cap_mb`` caps the resident memory of a local configuration.
Local configurations run in a fresh subprocess each (``python -m selp.bench.harness _worker``), so
the peak is their own and a cap really stops them: the parent polls the child's RSS
(``/proc/PID/status``, every 50 ms) and kills it past the memory cap or the deadline. RSS polling
was chosen over ``RLIMIT_AS`` because address-space limits count reservations that are never
touched (glibc's per-thread arenas, allocator pools of pyarrow), so they trip far below the real
footprint, in library-dependent ways, and as ``MemoryError`` anywhere in the code; the peak we report is
RSS, so the cap bounds the same quantity. An allocation spike faster than the polling interval can
overshoot the cap by what it allocates in 50 ms. Spark configurations run in this process on one
shared session: at the time cap a timer cancels all Spark jobs; memory is bounded by the
JVM heap, and a Java ``OutOfMemoryError`` is reported as the memory cap.

A cap hit is a row with status ``did not finish: time cap`` / ``did not finish: memory cap``,
never a crash; a failure is ``error: <first line>``. Full provenance that did not finish at one
scale is not run again at larger scales of the same engine and pattern (its row says so in ``note``).
"""

from __future__ import annotations

import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from selp.bench.datasets import save_stats, scaled_dataset, spec
from selp.bench.measure import jvm_pid, peak_rss_mb_of, proc_status_mb, reset_peak_rss, rss_mb
from selp.bench.results import machine_info, write_results
from selp.engines.registry import ALIASES, DEFAULT, ENGINES, get_engine
from selp.errors import SelpError

MODES = ("semi-naive", "top-k", "full-provenance")
TIME_CAP = "did not finish: time cap"
MEMORY_CAP = "did not finish: memory cap"
POLL_S = 0.05

Say = Callable[[str], None]

# the columns every results.csv starts with, in this order (then the extras)
COLUMNS = [
    ("dataset", "dataset"), ("scale", "scale"), ("edb_rows", "EDB rows"), ("output_tuples", "output tuples"),
    ("pattern", "pattern"), ("instrumented_rules", "rules"), ("k", "k"), ("engine", "engine"), ("mode", "mode"),
    ("seconds", "seconds"), ("peak_memory_mb", "peak MiB"), ("vs_semi_naive", "/ semi-naive"),
    ("vs_top1", "/ top-1"), ("status", "status"),
]


@dataclass(frozen=True)
class Config:
    """One measured configuration."""

    engine: str
    mode: str
    pattern: str | None = None  # pattern name (None for semi-naive)
    pattern_text: str | None = None
    k: int | None = None

    def label(self) -> str:
        if self.mode == "semi-naive":
            return f"{self.engine} semi-naive"
        return f"{self.engine} {self.mode} {self.pattern} k={self.k}"


def load_patterns(dataset: str, names: str | list[str] | None) -> dict[str, str]:
    """``{name: text}`` of the named patterns to run: ``all``/None, or a list/comma list of names."""
    from selp.bench.patterns import load_named_patterns

    known = {n: text for n, (text, _) in load_named_patterns(spec(dataset).patterns).items()}
    if names is None or names == "all" or names == ["all"]:
        return known
    wanted = [n.strip() for n in (names.split(",") if isinstance(names, str) else names) if n.strip()]
    unknown = [n for n in wanted if n not in known]
    if unknown or not wanted:
        raise SelpError(f"unknown pattern {unknown[0] if unknown else '(none)'!r} for {dataset} (choose {', '.join(known)} or all)")
    return {n: known[n] for n in wanted}


# --------------------------------------------------------------------------------------------
# one run of one configuration (shared by the local worker and the Spark runner)


def _from_files(cfg: dict[str, Any]) -> bool:
    """Whether the run reads the database files itself (timed with its loading): an engine whose
    input is the files; the full-provenance baseline is the Python one on every engine."""
    return get_engine(cfg["engine"]).computes_from_files and cfg["mode"] != "full-provenance"


def _measure_local(analysis, db, cfg: dict[str, Any]) -> dict[str, Any]:
    """One local run: seconds of the computation and what it produced."""
    mode = cfg["mode"]
    gc_collect()
    t0 = time.perf_counter()
    if _from_files(cfg):
        return _measure_files(analysis, cfg, t0)
    if mode == "semi-naive":
        facts = get_engine(cfg["engine"]).evaluate(analysis, db.facts)
        seconds = time.perf_counter() - t0
        return {"seconds": seconds, "count": sum(len(v) for v in facts.values())}
    if mode == "top-k":
        from selp.language.pattern_parser import parse_pattern
        from selp.topk.local import run_topk_local
        from selp.topk.monoid import get_monoid
        from selp.topk.task import make_task

        task = make_task(analysis, db.types, get_monoid(cfg["monoid"]), cfg["k"], parse_pattern(cfg["pattern_text"]), cfg["pattern_text"])
        table = run_topk_local(task, db)
        seconds = time.perf_counter() - t0
        return {"seconds": seconds, "answers": len(table.answers()), "entries": sum(len(v) for v in table.entries.values()),
                "instrumented_rules": len(task.inst.program.rules)}
    from selp.bench.fullprov import full_provenance_local

    res = full_provenance_local(analysis, db, cfg["pattern_text"], cfg["k"], cfg["monoid"])
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "answers": len(res.table.answers()), "entries": sum(len(v) for v in res.table.entries.values()),
            "instrumented_rules": res.instrumented_rules, "hyperedges": res.hyperedges,
            "materialise_seconds": res.materialise_seconds, "query_seconds": res.query_seconds}


def _measure_files(analysis, cfg: dict[str, Any], t0: float) -> dict[str, Any]:
    """One run of an engine that reads the files itself, loading included (part of its work)."""
    if cfg["mode"] == "semi-naive":
        result = get_engine(cfg["engine"]).run(analysis, cfg["db"])
        try:
            seconds = time.perf_counter() - t0
            return {"seconds": seconds, "count": sum(result.count(r) for r in result.relations())}
        finally:
            result.close()
    from selp.topk.api import topk

    table = topk(analysis, cfg["db"], cfg["pattern_text"], cfg["k"], cfg["monoid"], engine=cfg["engine"])
    seconds = time.perf_counter() - t0
    # counted from the arrays: building millions of Python entries would time the counting
    summary = table.summary() if hasattr(table, "summary") else None
    if summary is not None:
        answers, entries = sum(s["facts"] for s in summary.values()), sum(s["entries"] for s in summary.values())
        table.close()
    else:
        answers, entries = len(table.answers()), sum(len(v) for v in table.entries.values())
    return {"seconds": seconds, "answers": answers, "entries": entries}


def gc_collect() -> None:
    """Free the previous run's structures before timing the next one."""
    import gc

    gc.collect()


def _worker(spec_: dict[str, Any]) -> None:
    """The local subprocess: load once, then warm-up + repeats; JSON lines on stdout."""
    from selp.database import load_database
    from selp.language import parse_program_file
    from selp.language.validate import analyze

    def emit(obj: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    analysis = analyze(parse_program_file(spec_["program"]))
    db = None if _from_files(spec_) else load_database(analysis, spec_["db"])
    emit({"event": "loaded", "peak_rss_mb": rss_mb()})
    for i in range(spec_["warmup"] + spec_["repeat"]):
        try:
            out = _measure_local(analysis, db, spec_)
        except MemoryError:
            emit({"event": "memory"})
            return
        emit({"event": "run", "run": i, "warmup": i < spec_["warmup"], "peak_rss_mb": rss_mb(), **out})
    emit({"event": "done", "peak_rss_mb": rss_mb()})


def run_local_config(program: Path, db: Path, cfg: Config, repeat: int, warmup: int, timeout_s: float | None,
                     memory_cap_mb: float | None, monoid: str = "confidence") -> dict[str, Any]:
    """Run one in-process configuration (an engine without a Spark session) in a subprocess
    under the time and memory caps. The full-provenance baseline is the Python one on all."""
    payload = {"program": str(program), "db": str(db), "mode": cfg.mode, "pattern_text": cfg.pattern_text,
               "k": cfg.k, "monoid": monoid, "repeat": repeat, "warmup": warmup, "engine": cfg.engine}
    env = dict(os.environ, PYTHONHASHSEED="0")  # same set layouts run to run
    runs: list[dict[str, Any]] = []
    status = "ok"
    peak = 0.0
    with tempfile.TemporaryFile(mode="w+") as err:
        proc = subprocess.Popen([sys.executable, "-m", "selp.bench.harness", "_worker", json.dumps(payload)],
                                stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        # the deadline is per run: it restarts when the child reports a finished run (or loading)
        deadline = time.monotonic() + (timeout_s or 0) + 60 if timeout_s else None  # + loading
        done = False
        while True:
            rss = proc_status_mb(proc.pid, "VmRSS")
            if rss is not None:
                peak = max(peak, rss)
                if memory_cap_mb and rss > memory_cap_mb:
                    status = MEMORY_CAP
                    break
            if deadline is not None and time.monotonic() > deadline:
                status = TIME_CAP
                break
            try:
                line = lines.get(timeout=POLL_S)
            except queue.Empty:
                continue
            if line is None:
                break
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            peak = max(peak, ev.get("peak_rss_mb", 0.0))
            if ev["event"] in ("loaded", "run"):
                if ev["event"] == "run":
                    runs.append(ev)
                if timeout_s:
                    deadline = time.monotonic() + timeout_s
            elif ev["event"] == "memory":
                status = MEMORY_CAP
            elif ev["event"] == "done":
                done = True
        if status != "ok" and proc.poll() is None:
            proc.kill()  # our own child, by handle: a cap must actually stop the work
        rc = proc.wait()
        if status == "ok" and (rc != 0 or not done):
            err.seek(0)
            tail = [ln for ln in err.read().strip().splitlines() if ln.strip()][-1:] or [f"exit code {rc}"]
            status = MEMORY_CAP if "MemoryError" in tail[0] else f"error: {tail[0][:200]}"
    return _summarise(runs, status, peak)


def _summarise(runs: list[dict[str, Any]], status: str, peak: float) -> dict[str, Any]:
    timed = [r for r in runs if not r["warmup"]]
    row: dict[str, Any] = {"status": status, "repeats": len(timed), "peak_memory_mb": round(peak, 1) if peak else None}
    last = (timed or runs or [{}])[-1]
    for key in ("count", "answers", "entries", "instrumented_rules", "hyperedges", "load_seconds"):
        if key in last:
            row[key] = last[key]
    if timed and status == "ok":
        row["seconds"] = round(statistics.median(r["seconds"] for r in timed), 3)
        row["seconds_all"] = [round(r["seconds"], 3) for r in timed]
        for key in ("materialise_seconds", "query_seconds"):
            if key in timed[-1]:
                row[key] = round(statistics.median(r[key] for r in timed), 3)
    return row


# --------------------------------------------------------------------------------------------
# Spark, in this process on the shared session


class _Cancelled(Exception):
    pass


def _measure_spark(spark, analysis, program: Path, db: Path, cfg: Config, monoid: str, workdir: Path,
                   expired: threading.Event) -> dict[str, Any]:
    def progress(*_args) -> None:
        if expired.is_set():
            raise _Cancelled()

    t0 = time.perf_counter()
    if cfg.mode == "semi-naive":
        from selp.engines.spark import run_spark

        res = run_spark(analysis, db, spark, progress)
        count = sum(res.count(rel) for rel in res.relations())
        seconds = time.perf_counter() - t0 - res.load_seconds
        res.close()
        return {"seconds": seconds, "count": count, "load_seconds": res.load_seconds}
    if cfg.mode == "top-k":
        from selp.engines.spark_load import load_spark_database
        from selp.language.pattern_parser import parse_pattern
        from selp.topk.monoid import get_monoid
        from selp.topk.spark import run_topk_spark
        from selp.topk.task import make_task

        t_load = time.perf_counter()
        types = load_spark_database(analysis, db, spark).types  # the column types, as topk() gets them
        t_load = time.perf_counter() - t_load
        task = make_task(analysis, types, get_monoid(monoid), cfg.k or 1, parse_pattern(cfg.pattern_text or ""), cfg.pattern_text)
        table = run_topk_spark(task, db, spark, progress)
        seconds = time.perf_counter() - t0 - t_load - table.load_seconds
        out = {"seconds": seconds, "entries": table.count(), "instrumented_rules": len(task.inst.program.rules),
               "load_seconds": t_load + table.load_seconds}
        out["answers"] = table.answer_count()
        table.close()
        return out
    import shutil

    from selp.bench.fullprov import full_provenance_spark

    work = workdir / f"hypergraph-{os.getpid()}"
    try:
        res = full_provenance_spark(analysis, db, cfg.pattern_text, cfg.k or 1, monoid, spark, work, progress)
        seconds = time.perf_counter() - t0 - res.table.load_seconds
        out = {"seconds": seconds, "entries": res.table.count(), "instrumented_rules": res.instrumented_rules,
               "hyperedges": res.hyperedges, "materialise_seconds": res.materialise_seconds,
               "query_seconds": res.query_seconds - res.table.load_seconds}
        out["answers"] = res.table.answer_count()
        res.table.close()
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_spark_config(spark, program: Path, db: Path, cfg: Config, repeat: int, warmup: int, timeout_s: float | None,
                     monoid: str, workdir: Path) -> dict[str, Any]:
    """Run one Spark configuration on the shared session; a timer cancels its jobs at the cap."""
    from selp.language import parse_program_file
    from selp.language.validate import analyze

    analysis = analyze(parse_program_file(str(program)))
    jvm = jvm_pid(spark)
    if jvm is not None:
        reset_peak_rss(jvm)
    runs: list[dict[str, Any]] = []
    status = "ok"
    for i in range(warmup + repeat):
        expired = threading.Event()

        def cancel(ev: threading.Event = expired) -> None:
            ev.set()
            try:
                spark.sparkContext.cancelAllJobs()
            except Exception:  # noqa: BLE001 - the session may be shutting down
                pass

        timer = threading.Timer(timeout_s, cancel) if timeout_s else None
        if timer:
            timer.daemon = True
            timer.start()
        try:
            out = _measure_spark(spark, analysis, program, db, cfg, monoid, workdir, expired)
            runs.append({"warmup": i < warmup, **out})
        except _Cancelled:
            status = TIME_CAP
        except Exception as err:  # noqa: BLE001 - a cancelled job surfaces as a Py4J/Spark error
            text = str(err)
            if expired.is_set():
                status = TIME_CAP
            elif "OutOfMemoryError" in text or "Java heap space" in text:
                status = MEMORY_CAP
            else:
                first = next((ln for ln in text.strip().splitlines() if ln.strip()), type(err).__name__)
                status = f"error: {first[:200]}"
        finally:
            if timer:
                timer.cancel()
            try:
                spark.catalog.clearCache()  # each run starts cold in the cache
            except Exception:  # noqa: BLE001
                pass
        if expired.is_set():
            status = TIME_CAP
        if status != "ok":
            break
    peak = peak_rss_mb_of(jvm) if jvm is not None else None
    return _summarise(runs, status, peak or 0.0)


# --------------------------------------------------------------------------------------------
# the harness


def fig_k(ks: list[int]) -> int:
    """The k of Figure 5 (and of the full-provenance baseline): 3 if asked for, else the first."""
    return 3 if 3 in ks else ks[0]


def run_bench(
    dataset: str,
    scales: list[int] | None = None,
    patterns: str | list[str] | None = "all",
    ks: list[int] | None = None,
    engines: list[str] | None = None,
    modes: list[str] | None = None,
    repeat: int = 3,
    warmup: int = 1,
    timeout_s: float | None = 600.0,
    memory_cap_mb: float | None = 8192.0,
    workdir: str | Path = "bench-out/data",
    spark: Any = None,
    say: Say = lambda m: None,
    seed: int = 0,
    monoid: str = "confidence",
) -> list[dict[str, Any]]:
    """Measure ``dataset`` at each scale; one row per (scale, engine, mode, pattern, k).

    Rows carry the columns of :data:`COLUMNS` plus extras (``answers``, ``entries``,
    ``hyperedges``, ``materialise_seconds``, ``query_seconds``, ``seconds_all``, ``repeats``,
    ``loadavg_1m``, ``note``). Ratios are filled in by :func:`add_ratios`. ``spark`` is needed
    when ``engines`` includes spark."""
    s = spec(dataset)
    scales = list(scales or s.default_scales)
    ks = list(ks or [1, 3, 7])
    engines = [ALIASES.get(e, e) for e in (engines or [DEFAULT])]
    modes = list(modes or MODES)
    bad = [m for m in modes if m not in MODES] + [e for e in engines if e not in ENGINES]
    if bad:
        raise SelpError(f"unknown mode or engine {bad[0]!r}")
    if min(ks) < 1 or repeat < 1 or warmup < 0:
        raise SelpError("k and --repeat must be at least 1")
    session = [e for e in engines if ENGINES[e].needs_spark_session]
    if session and spark is None:
        raise SelpError(f"the {session[0]} engine needs a Spark session")
    chosen = load_patterns(dataset, patterns)
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    configs: list[Config] = []
    for engine in engines:
        if "semi-naive" in modes:
            configs.append(Config(engine, "semi-naive"))
        if "top-k" in modes:
            configs += [Config(engine, "top-k", n, t, k) for n, t in chosen.items() for k in ks]
        if "full-provenance" in modes:
            configs += [Config(engine, "full-provenance", n, t, fig_k(ks)) for n, t in chosen.items()]
    total = len(configs) * len(scales)
    rows: list[dict[str, Any]] = []
    failed_fullprov: dict[tuple[str, str], tuple[int, str]] = {}  # (engine, pattern) -> (scale, status)
    n = 0
    for scale in scales:
        t0 = time.perf_counter()
        db, stats = scaled_dataset(work, dataset, scale, seed)
        say(f"{dataset} scale {scale}: {stats['units']} {stats['unit']}, {stats['edb_rows']} EDB rows"
            f" ({time.perf_counter() - t0:.1f}s to prepare; load average {_loadavg()})")
        for cfg in configs:
            n += 1
            tag = f"[{n}/{total}] {dataset} {scale} {cfg.label()}"
            row: dict[str, Any] = {"dataset": dataset, "scale": scale, "edb_rows": stats["edb_rows"],
                                   "output_tuples": stats.get("output_tuples"), "pattern": cfg.pattern,
                                   "pattern_text": cfg.pattern_text, "k": cfg.k, "engine": cfg.engine, "mode": cfg.mode,
                                   "monoid": monoid if cfg.mode != "semi-naive" else None}
            prior = failed_fullprov.get((cfg.engine, cfg.pattern or "")) if cfg.mode == "full-provenance" else None
            if prior is not None:
                row.update({"status": prior[1], "note": f"not run: did not finish at scale {prior[0]}"})
                say(f"{tag}: skipped, {prior[1]} at scale {prior[0]}")
                rows.append(row)
                continue
            say(f"{tag} ...")
            t1 = time.perf_counter()
            if not ENGINES[cfg.engine].needs_spark_session:
                res = run_local_config(s.program, db, cfg, repeat, warmup, timeout_s, memory_cap_mb, monoid)
            else:
                res = run_spark_config(spark, s.program, db, cfg, repeat, warmup, timeout_s, monoid, work)
            row.update(res)
            row["wall_seconds"] = round(time.perf_counter() - t1, 1)
            row["loadavg_1m"] = _loadavg()
            if cfg.mode == "semi-naive" and row["status"] == "ok":
                count = row.pop("count", None)
                if stats.get("output_tuples") is None and count is not None:
                    stats["output_tuples"] = count
                    save_stats(db, stats)  # later runs know the output size without evaluating
                elif count is not None and stats.get("output_tuples") not in (None, count):
                    row["status"] = f"error: {count} output tuples, expected {stats['output_tuples']}"
                row["output_tuples"] = count
            row.pop("count", None)
            if cfg.mode == "full-provenance" and row["status"].startswith("did not finish"):
                failed_fullprov[(cfg.engine, cfg.pattern or "")] = (scale, row["status"])
            took = f"{row['seconds']:.2f}s" if "seconds" in row else f"after {row['wall_seconds']}s"
            mem = f", {row['peak_memory_mb']:.0f} MiB" if row.get("peak_memory_mb") else ""
            say(f"{tag}: {row['status']}, {took}{mem}")
            rows.append(row)
        for row in rows:  # the output size is known once semi-naive ran on some engine
            if row["dataset"] == dataset and row["scale"] == scale and row.get("output_tuples") is None:
                row["output_tuples"] = stats.get("output_tuples")
    add_ratios(rows)
    return ordered(rows)


def _loadavg() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def add_ratios(rows: list[dict[str, Any]]) -> None:
    """``vs_semi_naive``: seconds / semi-naive seconds on the same dataset, scale and engine;
    ``vs_top1``: seconds / the k=1 seconds of the same mode, pattern, scale and engine."""
    def key(r: dict[str, Any]) -> tuple:
        return (r["dataset"], r["scale"], r["engine"])

    semi = {key(r): r["seconds"] for r in rows if r["mode"] == "semi-naive" and r.get("seconds")}
    top1 = {(*key(r), r["mode"], r["pattern"]): r["seconds"] for r in rows
            if r["mode"] != "semi-naive" and r.get("k") == 1 and r.get("seconds")}
    for r in rows:
        r["vs_semi_naive"] = r["vs_top1"] = None
        if r.get("seconds") is None:
            continue
        if key(r) in semi:
            r["vs_semi_naive"] = round(r["seconds"] / semi[key(r)], 2)
        t1 = top1.get((*key(r), r["mode"], r["pattern"]))
        if t1 and r["mode"] != "semi-naive":
            r["vs_top1"] = round(r["seconds"] / t1, 2)


def ordered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with the :data:`COLUMNS` keys first (in that order), then the rest."""
    first = [k for k, _ in COLUMNS]
    return [{**{k: r.get(k) for k in first}, **{k: v for k, v in r.items() if k not in first}} for r in rows]


def _fmt(key: str, v: Any) -> str:
    if v is None:
        return ""
    if key in ("edb_rows", "output_tuples", "scale") and isinstance(v, int):
        return f"{v:,}".replace(",", " ")
    if key == "peak_memory_mb":
        return f"{v:.0f}"
    if key == "seconds":
        return f"{v:.3f}" if v < 1 else f"{v:.2f}" if v < 100 else f"{v:.0f}"
    return str(v)


def format_markdown(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of :func:`run_bench` rows (the :data:`COLUMNS`)."""
    head = [t for _, t in COLUMNS]
    body = [[_fmt(k, r.get(k)) for k, _ in COLUMNS] for r in rows]
    widths = [max(len(c) for c in col) for col in zip(head, *body)]
    right = {"scale", "edb_rows", "output_tuples", "instrumented_rules", "k", "seconds", "peak_memory_mb",
             "vs_semi_naive", "vs_top1"}

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.rjust(w) if k in right else c.ljust(w)
                                 for c, w, (k, _) in zip(cells, widths, COLUMNS)) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if k in right else "-" * (w + 2) for w, (k, _) in zip(widths, COLUMNS)) + "|"
    return "\n".join([line(head), rule] + [line(b) for b in body])


def save(rows: list[dict[str, Any]], out_dir: str | Path, machine: dict[str, Any] | None = None,
         command: str | None = None) -> list[Path]:
    """Write ``results.csv`` and ``results.json`` (with machine info, date and the command)."""
    info = dict(machine if machine is not None else machine_info())
    if command:
        info["command"] = command
    return write_results(ordered(rows), out_dir, info)


# --------------------------------------------------------------------------------------------
# plots


def plot(rows: list[dict[str, Any]], out_dir: str | Path, say: Say = lambda m: None) -> list[Path]:
    """Figure 5 (seconds vs output tuples, one line per pattern at Figure 5's k, plus semi-naive
    and, dashed, full provenance) and Figure 6 (seconds vs k at the largest scale with a k
    series) per dataset and engine, as PNG files. Without matplotlib: one line, no files."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        say("matplotlib is not installed (pip install 'selp[bench]'): no plots, results are in the CSV/JSON")
        return []
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    ok = [r for r in rows if r.get("status") == "ok" and r.get("seconds") is not None]
    for dataset, engine in dict.fromkeys((r["dataset"], r["engine"]) for r in ok):
        group = [r for r in ok if r["dataset"] == dataset and r["engine"] == engine]
        ks = sorted({r["k"] for r in group if r.get("k")})
        patterns = list(dict.fromkeys(r["pattern"] for r in group if r.get("pattern")))
        if not ks:
            continue
        k5 = fig_k(ks)
        fig, ax = plt.subplots(figsize=(6.4, 4.4))

        def series(pred: Callable[[dict[str, Any]], bool]) -> tuple[list, list]:
            pts = sorted((r["output_tuples"], r["seconds"]) for r in group if pred(r) and r.get("output_tuples"))
            return [p[0] for p in pts], [p[1] for p in pts]

        x, y = series(lambda r: r["mode"] == "semi-naive")
        if x:
            ax.plot(x, y, "k-o", label="semi-naive", linewidth=2)
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for i, p in enumerate(patterns):
            c = colors[i % len(colors)]
            x, y = series(lambda r, p=p: r["mode"] == "top-k" and r["pattern"] == p and r["k"] == k5)
            if x:
                ax.plot(x, y, "-s", color=c, label=f"{p} top-{k5}")
            x, y = series(lambda r, p=p: r["mode"] == "full-provenance" and r["pattern"] == p)
            if x:
                ax.plot(x, y, "--x", color=c, label=f"{p} full prov.")
        ax.set_xlabel("output tuples")
        ax.set_ylabel("seconds")
        ax.set_title(f"{dataset} on {engine}: time vs output size (k={k5})")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
        path = out / f"fig5_{dataset}_{engine}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
        # Figure 6: the largest scale where some pattern has two or more k values
        scales = [sc for sc in sorted({r["scale"] for r in group}, reverse=True)
                  if any(len({r["k"] for r in group if r["scale"] == sc and r["mode"] == "top-k" and r["pattern"] == p}) > 1
                         for p in patterns)]
        if not scales:
            continue
        sc = scales[0]
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        for i, p in enumerate(patterns):
            pts = sorted((r["k"], r["seconds"]) for r in group if r["scale"] == sc and r["mode"] == "top-k" and r["pattern"] == p)
            if len(pts) > 1:
                ax.plot([a for a, _ in pts], [b for _, b in pts], "-o", color=colors[i % len(colors)], label=f"{p} top-k")
        semi = [r["seconds"] for r in group if r["scale"] == sc and r["mode"] == "semi-naive"]
        if semi:
            ax.axhline(semi[0], color="k", linestyle=":", label="semi-naive")
        ax.set_xlabel("k")
        ax.set_ylabel("seconds")
        out_t = next((r["output_tuples"] for r in group if r["scale"] == sc and r.get("output_tuples")), sc)
        ax.set_title(f"{dataset} on {engine}: time vs k ({out_t:,} output tuples)")
        ax.set_xticks(ks)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        path = out / f"fig6_{dataset}_{engine}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


if __name__ == "__main__":
    if sys.argv[1:2] == ["_worker"]:
        _worker(json.loads(sys.argv[2]))
    else:
        sys.exit("usage: selp bench DATASET (this module's command line is the local worker)")
