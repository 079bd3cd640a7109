"""The TC benchmark: the engines' plain evaluation of ``tc.dl``, with exact output counts.

:func:`bench_tc` generates (and caches, :func:`tc_dataset`) one dataset per target size
(:mod:`selp.gen.tc`) and times each engine on it:

* an in-process engine (``local``) runs in a fresh subprocess per configuration, so its peak RSS is its own
  (``ru_maxrss`` never goes down within a process) and a timeout really stops it (the child is
  killed);
* the **Spark** engine runs in this process on one session created once and reused; a timeout
  cancels the running Spark jobs (``cancelAllJobs``) and aborts between iterations through the
  progress callback. Only the evaluation is timed: session start is excluded, loading is reported
  separately.

Run ``python -m selp.bench --help`` for a command line.
"""

from __future__ import annotations

import gc
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from selp.bench.datasets import spec as dataset_spec
from selp.bench.measure import jvm_pid, peak_rss_mb_of, reset_peak_rss, rss_mb
from selp.bench.results import write_results
from selp.gen.tc import GENERATOR_VERSION, STATS_FILE, generate_tc, tc_size_for

TC_PROGRAM = dataset_spec("tc").program
TC_OUTPUT = "tc"

BenchProgress = Callable[[str], None]


def tc_dataset(workdir: str | Path, target: int, seed: int = 0) -> tuple[Path, dict[str, Any]]:
    """The dataset for ``target`` output tuples under ``workdir``, generated once and then reused.

    The directory name carries every generator parameter, and the cached statistics must match
    them (including :data:`GENERATOR_VERSION`), so a stale or half-written directory is redone.
    """
    nodes, edges, k = tc_size_for(target)
    d = Path(workdir) / f"tc_t{target}_n{nodes}_m{edges}_k{k}_s{seed}"
    stats_path = d / STATS_FILE
    if stats_path.is_file() and (d / "edge.csv").is_file():
        try:
            stats = json.loads(stats_path.read_text(encoding="utf-8"))
        except ValueError:
            stats = {}
        if stats.get("generator_version") == GENERATOR_VERSION and (
            stats.get("nodes"),
            stats.get("edges"),
            stats.get("components"),
            stats.get("seed"),
        ) == (nodes, edges, k, seed):
            return d, stats
    return d, generate_tc(d, nodes, edges, seed, components=k)


class _Timeout(Exception):
    """Raised inside an evaluation (from its progress callback) when the time cap has passed."""


def _local_worker(spec: dict[str, Any]) -> None:
    """Body of the subprocess of an in-process engine: JSON lines on stdout, one per event.

    Events: ``progress`` (per iteration), ``run`` (after each evaluation, warm-up included, with the
    peak RSS so far, so a killed child still leaves a memory figure), ``done``.
    """
    from selp.engines.registry import get_engine
    from selp.language import parse_program_file
    from selp.language.validate import analyze

    def emit(obj: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    analysis = analyze(parse_program_file(spec["program"]))
    engine = get_engine(spec["engine"])
    runs = spec["warmup"] + spec["repeat"]
    for i in range(runs):
        t0 = time.perf_counter()

        def progress(comp, iteration: int, delta: int, total: int, _i: int = i, _t0: float = t0) -> None:
            emit({"event": "progress", "run": _i, "iteration": iteration, "delta": delta, "total": total,
                  "elapsed": time.perf_counter() - _t0})

        res = engine.run(analysis, spec["db"], progress)
        emit({
            "event": "run",
            "run": i,
            "warmup": i < spec["warmup"],
            "seconds": res.seconds,
            "load_seconds": getattr(res, "load_seconds", 0.0),
            "iterations": res.iterations,
            "count": res.count(spec["output"]),
            "peak_rss_mb": rss_mb(),
        })
        close = getattr(res, "close", None)
        if callable(close):
            close()
        del res  # free the previous fixpoint before the next run, so the peak is one run's
        gc.collect()
    emit({"event": "done", "peak_rss_mb": rss_mb()})


def _run_local_config(
    engine: str, db: Path, repeat: int, warmup: int, timeout_s: float | None, say: BenchProgress
) -> dict[str, Any]:
    """Time the in-process ``engine`` on ``db`` in a fresh subprocess; kill it at the time cap."""
    spec = {"program": str(TC_PROGRAM), "db": str(db), "repeat": repeat, "warmup": warmup, "output": TC_OUTPUT,
            "engine": engine}
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = "0"  # same set layouts run to run
    with tempfile.TemporaryFile(mode="w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "selp.bench", "_local_worker", json.dumps(spec)],
            stdout=subprocess.PIPE, stderr=err, text=True, env=env,
        )
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:  # a thread, so the parent can wait with a deadline
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + timeout_s if timeout_s else None
        runs: list[dict[str, Any]] = []
        done: dict[str, Any] | None = None
        status = "ok"
        last_report = time.monotonic()
        while True:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                status = "did not finish"
                break
            try:
                line = lines.get(timeout=wait)
            except queue.Empty:
                status = "did not finish"
                break
            if line is None:
                break
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev["event"] == "run":
                runs.append(ev)
                tag = "warm-up" if ev["warmup"] else f"run {ev['run'] - warmup + 1}/{repeat}"
                say(f"  {engine} {tag}: {ev['seconds']:.2f}s, {ev['count']} tuples, {ev['iterations']} iterations")
            elif ev["event"] == "progress" and time.monotonic() - last_report > 10:
                last_report = time.monotonic()  # long runs only: at most one line per 10 s
                say(f"  {engine} iteration {ev['iteration']}: +{ev['delta']} new, {ev['total']} total ({ev['elapsed']:.0f}s)")
            elif ev["event"] == "done":
                done = ev
        if status != "ok":
            proc.kill()  # our own child, by handle: a timeout must actually stop the work
        rc = proc.wait()
        if status == "ok" and (rc != 0 or done is None):
            err.seek(0)
            tail = err.read().strip().splitlines()[-1:] or [f"exit code {rc}"]
            status = f"error: {tail[0]}"
    timed = [r for r in runs if not r["warmup"]]
    row: dict[str, Any] = {"status": status, "repeats": len(timed)}
    if runs:
        row["peak_rss_mb"] = round((done or runs[-1])["peak_rss_mb"], 1)
    if timed:
        row.update(_summarise(timed))
    elif runs:  # only the warm-up finished: keep its count and iterations for the record
        row.update({"output_tuples": runs[0]["count"], "iterations": runs[0]["iterations"]})
    return row


def _summarise(timed: list[dict[str, Any]]) -> dict[str, Any]:
    """Median seconds (evaluation and load), all evaluation times, and the run's count/iterations."""
    out = {
        "seconds": round(statistics.median(r["seconds"] for r in timed), 3),
        "seconds_all": [round(r["seconds"], 3) for r in timed],
        "load_seconds": round(statistics.median(r["load_seconds"] for r in timed), 3),
        "iterations": timed[-1]["iterations"],
        "output_tuples": timed[-1]["count"],
    }
    if "wall_seconds" in timed[-1]:
        out["wall_seconds"] = round(statistics.median(r["wall_seconds"] for r in timed), 3)
    return out


def _jvm_stats(spark) -> dict[str, Any]:
    """Driver JVM memory: used heap now, and peak RSS of the JVM process since the last reset."""
    out: dict[str, Any] = {}
    try:
        rt = spark._jvm.java.lang.Runtime.getRuntime()
        out["jvm_heap_used_mb"] = round((rt.totalMemory() - rt.freeMemory()) / 2**20, 1)
        out["jvm_heap_max_mb"] = round(rt.maxMemory() / 2**20, 1)
        pid = spark._jvm.java.lang.ProcessHandle.current().pid()
        peak = peak_rss_mb_of(pid)
        if peak is not None:
            out["jvm_peak_rss_mb"] = round(peak, 1)
    except Exception:  # noqa: BLE001 - memory figures are best effort (e.g. a remote driver)
        pass
    return out


def _run_spark_config(
    spark, engine: str, db: Path, repeat: int, warmup: int, timeout_s: float | None, say: BenchProgress
) -> dict[str, Any]:
    """Time ``engine`` (one that runs on a Spark session) on ``db`` in this process, on the
    shared session.

    At the time cap a timer thread cancels all running Spark jobs (the action in progress fails)
    and the progress callback raises between iterations, so the work stops either way.
    """
    from selp.engines.registry import get_engine
    from selp.language import parse_program_file
    from selp.language.validate import analyze

    analysis = analyze(parse_program_file(TC_PROGRAM))
    eng = get_engine(engine)
    expired = threading.Event()

    def cancel() -> None:
        expired.set()
        try:
            spark.sparkContext.cancelAllJobs()
        except Exception:  # noqa: BLE001 - the session may be busy shutting down
            pass

    timer = threading.Timer(timeout_s, cancel) if timeout_s else None
    jvm = jvm_pid(spark)
    reset_peak_rss()
    if jvm is not None:
        reset_peak_rss(jvm)
    runs: list[dict[str, Any]] = []
    status = "ok"
    last_report = [time.monotonic()]
    if timer:
        timer.daemon = True
        timer.start()
    try:
        for i in range(warmup + repeat):
            t0 = time.perf_counter()

            def progress(comp, iteration: int, delta: int, total: int, _t0: float = t0) -> None:
                if expired.is_set():
                    raise _Timeout()
                if time.monotonic() - last_report[0] > 10:
                    last_report[0] = time.monotonic()
                    say(f"  {engine} iteration {iteration}: +{delta} new, {total} total ({time.perf_counter() - _t0:.0f}s)")

            res = eng.run(analysis, db, progress, spark)
            count = res.count(TC_OUTPUT)  # forces the result if the engine left it lazy
            wall = time.perf_counter() - t0
            load = getattr(res, "load_seconds", None)
            run = {
                "warmup": i < warmup,
                "seconds": res.seconds,
                # without an engine-reported load time: everything outside the evaluation
                "load_seconds": load if load is not None else max(0.0, wall - res.seconds),
                "wall_seconds": wall,
                "iterations": res.iterations,
                "count": count,
            }
            runs.append(run)
            tag = "warm-up" if run["warmup"] else f"run {i - warmup + 1}/{repeat}"
            say(f"  {engine} {tag}: {res.seconds:.2f}s (wall {wall:.2f}s), {count} tuples, {res.iterations} iterations")
            for name in ("close", "unpersist"):  # release cached DataFrames, if the result holds any
                fn = getattr(res, name, None)
                if callable(fn):
                    fn()
                    break
            del res
            spark.catalog.clearCache()  # each run starts cold in the cache, as the first one did
            if expired.is_set():
                raise _Timeout()
    except _Timeout:
        status = "did not finish"
    except Exception as err:  # noqa: BLE001 - a cancelled job surfaces as a Py4J/Spark error
        status = "did not finish" if expired.is_set() else f"error: {str(err).strip().splitlines()[0][:200]}"
    finally:
        if timer:
            timer.cancel()
    if expired.is_set():
        status = "did not finish"
    timed = [r for r in runs if not r["warmup"]]
    row: dict[str, Any] = {"status": status, "repeats": len(timed), "peak_rss_mb": round(rss_mb(), 1)}
    row.update(_jvm_stats(spark))
    if timed:
        row.update(_summarise(timed))
    elif runs:
        row.update({"output_tuples": runs[0]["count"], "iterations": runs[0]["iterations"]})
    return row


def bench_tc(
    scales: list[int],
    engines: list[str],
    repeat: int = 3,
    workdir: str | Path = "bench-work",
    master: str | None = None,
    progress: BenchProgress | None = None,
    timeout_s: float | None = 600.0,
    seed: int = 0,
    warmup: int = 1,
    spark=None,
) -> list[dict[str, Any]]:
    """Time ``engines`` on the TC dataset at each target output size; one row per (scale, engine).

    For each target in ``scales`` the dataset is generated into ``workdir`` (or reused), then each
    engine runs ``warmup`` untimed and ``repeat`` timed evaluations. ``seconds`` is the median
    evaluation time (loading excluded, reported as ``load_seconds``; for Spark also ``wall_seconds``
    around the whole call). ``timeout_s`` caps a whole configuration (warm-up and repeats): if it
    passes before any timed run finished the row's status is ``did not finish``; if some finished,
    their median is kept and ``repeats`` says how many.

    ``peak_rss_mb`` is the peak RSS of the process that evaluated: the local engine's own subprocess;
    for Spark, this Python driver process (reset per configuration where Linux allows) — the
    JVM is separate: ``jvm_heap_used_mb`` after the runs and ``jvm_peak_rss_mb`` of the driver JVM.

    The Spark session is ``spark`` if given, else ``get_spark(master)`` created once (its start is
    not timed) and left running for the caller. ``status`` is ``wrong count`` when an engine's
    output size differs from the generator's exact expectation.
    """
    from selp.engines.registry import get_engine, names

    say: BenchProgress = progress or (lambda msg: None)
    unknown = [e for e in engines if e not in names()]
    if unknown:
        raise ValueError(f"unknown engine(s): {', '.join(unknown)}; use {', '.join(names())}")
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    on_session = {e: get_engine(e).needs_spark_session for e in engines}
    if any(on_session.values()) and spark is None:
        from selp.engines.spark_session import get_spark

        say(f"starting Spark ({master or 'default master'}) ...")
        t0 = time.perf_counter()
        spark = get_spark(master)
        say(f"Spark session ready in {time.perf_counter() - t0:.1f}s (not counted)")
    rows: list[dict[str, Any]] = []
    for target in scales:
        t0 = time.perf_counter()
        db, stats = tc_dataset(work, target, seed)
        say(
            f"tc target {target}: {stats['nodes']} nodes, {stats['edge_rows']} edge rows,"
            f" {stats['connected_components']} components, expecting {stats['expected_tc']} tuples"
            f" ({time.perf_counter() - t0:.1f}s to prepare)"
        )
        for engine in engines:
            say(f"  {engine}: {warmup} warm-up + {repeat} timed run(s)")
            if on_session[engine]:
                res = _run_spark_config(spark, engine, db, repeat, warmup, timeout_s, say)
            else:
                res = _run_local_config(engine, db, repeat, warmup, timeout_s, say)
            row: dict[str, Any] = {
                "dataset": "tc",
                "target": target,
                "nodes": stats["nodes"],
                "components": stats["connected_components"],
                "edb_rows": stats["edge_rows"],
                "expected_tuples": stats["expected_tc"],
                "engine": engine,
                "master": (master or _master_of(spark)) if on_session[engine] else None,
                "timeout_s": timeout_s,
            }
            row.update(res)
            # the machine may be shared: the 1-minute load average tells how noisy the timing was
            row["loadavg_1m"] = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
            if row["status"] == "ok" and row.get("output_tuples") != stats["expected_tc"]:
                row["status"] = "wrong count"
            rows.append(row)
            say(f"  {engine}: {row['status']}" + (f", median {row['seconds']:.2f}s" if "seconds" in row else ""))
    return rows


def _master_of(spark) -> str | None:
    try:
        return spark.sparkContext.master
    except Exception:  # noqa: BLE001
        return None


# --------------------------------------------------------------------------------------------
# reporting

_COLUMNS = [
    ("dataset", "dataset"),
    ("target", "target"),
    ("edb_rows", "EDB rows"),
    ("output_tuples", "output"),
    ("engine", "engine"),
    ("seconds", "eval s"),
    ("load_seconds", "load s"),
    ("iterations", "iters"),
    ("peak_rss_mb", "RSS MiB"),
    ("jvm_heap_used_mb", "JVM heap MiB"),
    ("jvm_peak_rss_mb", "JVM RSS MiB"),
    ("status", "status"),
]


def _cell(key: str, v: Any) -> str:
    if v is None:
        return "-"
    if key.endswith("_mb"):
        return f"{v:.0f}"
    if key == "status" and len(str(v)) > 60:
        return str(v)[:57] + "..."  # full text stays in the CSV/JSON
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
    return str(v)


def format_table(rows: list[dict[str, Any]]) -> str:
    """An aligned text table of :func:`bench_tc` rows, then the spark/local time ratio per scale."""
    header = [title for _, title in _COLUMNS]
    body = [[_cell(key, r.get(key)) for key, _ in _COLUMNS] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(header)]
    numeric = {"target", "edb_rows", "output_tuples", "seconds", "load_seconds", "iterations",
               "peak_rss_mb", "jvm_heap_used_mb", "jvm_peak_rss_mb"}

    def fmt(cells: list[str]) -> str:
        parts = [
            c.rjust(w) if key in numeric else c.ljust(w)
            for c, w, (key, _) in zip(cells, widths, _COLUMNS)
        ]
        return "  ".join(parts).rstrip()

    lines = [fmt(header), "  ".join("-" * w for w in widths)]
    lines += [fmt(b) for b in body]
    ratios = []
    for target in dict.fromkeys(r["target"] for r in rows):
        by = {r["engine"]: r for r in rows if r["target"] == target}
        loc, spk = by.get("local"), by.get("spark")
        if not (loc and spk):
            continue
        if loc.get("status") == "ok" and spk.get("status") == "ok" and loc.get("seconds"):
            ratios.append(f"  target {target}: spark/local = {spk['seconds'] / loc['seconds']:.2f}")
        else:
            ratios.append(
                f"  target {target}: spark/local = n/a"
                f" (local {_cell('status', loc.get('status'))}, spark {_cell('status', spk.get('status'))})"
            )
    if ratios:
        lines += ["", "eval time ratio:"] + ratios
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# command line (``python -m selp.bench``, also the local-engine worker's entry point)


def main(argv: list[str] | None = None) -> int:
    """``python -m selp.bench``: run the TC benchmark and print the table."""
    import argparse

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_local_worker"]:
        _local_worker(json.loads(argv[1]))
        return 0
    p = argparse.ArgumentParser(prog="python -m selp.bench", description="Time the engines on the TC dataset.")
    p.add_argument("--scales", type=int, nargs="+", default=[100_000, 300_000, 1_000_000],
                   help="target numbers of tc tuples")
    from selp.engines.registry import names

    p.add_argument("--engines", nargs="+", default=["local", "spark"], choices=names())
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--workdir", default="bench-work", help="where generated datasets are cached")
    p.add_argument("--out", default=None, help="write results.csv and results.json here")
    p.add_argument("--master", default=None, help="Spark master (default: get_spark's)")
    p.add_argument("--timeout", type=float, default=600.0, help="cap per configuration, seconds (0: none)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    rows = bench_tc(args.scales, args.engines, args.repeat, args.workdir, args.master,
                    progress=lambda m: print(m, file=sys.stderr, flush=True),
                    timeout_s=args.timeout or None, seed=args.seed, warmup=args.warmup)
    print(format_table(rows))
    if args.out:
        for path in write_results(rows, args.out):
            print(f"wrote {path}", file=sys.stderr)
    return 0
