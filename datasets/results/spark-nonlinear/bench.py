"""Non-decomposable recursion on Spark (issue 19, item 3): today's global rounds against this
tree's, side by side in one run.

Usage: ``python datasets/results/spark-nonlinear/bench.py OUT_DIR [NODES] [BASE_COMMIT] [--full | --alternate[=R]]``
(defaults 340 nodes, commit deaa1b0). The graph is the anchors graph (``selp.gen.anchors``: N
nodes, 3N edges, seed 1; at N = 340 its closure has 105,301 tuples) and the program the
*nonlinear* closure ``path(x, z) :- path(x, y), path(y, z)``, which does not decompose (global
rounds). ``BASE_COMMIT``'s ``selp`` (``git archive``) is the "old" code, this tree's the "new".
Both run **at the same time**, each in its own process with its own session (``local[2]``,
driver 2g), so that they share whatever load the machine has: a warm-up eval (the N / 4 graph,
session start included), the same eval warm (``small``), then the eval of the closure, timed, its Spark jobs counted (a job group per run). Each eval's
time includes one count of the result relation through Spark (``read_seconds`` of it), so a
relation left to be decoded by its first reader is paid for. With
``--full`` each also runs the eval with ``spark.selp.rounds.adaptive=true`` (adaptive execution
left on in the rounds: a no-op for the old code) and top-1 of every fact on the N / 4 graph.
Writes ``results.json`` and prints it; the load average is read before and after.

``--alternate[=R]`` (s19n) measures the same evals *one at a time* instead: both sessions are
started and warmed up (one after the other), then each repetition runs the small eval and the
eval in one code and then the other, the order swapped every repetition (R repetitions, default
3), so that neither code's eval shares the two cores with the other's. ``--warm=W`` (s19r) first
runs W such repetitions per code and discards them; ``--json=FILE`` writes the results there;
``--runs=small`` (or ``eval``) runs only those; ``--program=trade`` (with ``--alternate``) times
the trade program (r3 nonlinear) on a synthetic database of NODES countries instead (its count
is reported as ``path`` too). Every run reports the CPU seconds of the driver and its JVM
(``cpu``), and the summary their medians beside the wall times'. It reports every run and
the median per code, and writes ``results-alternate.json``. Concurrent runs penalise the faster
code (its eval runs while the slower one's saturates both cores, the slower one then finishes
alone); alternating runs each code under the same (background) load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import io
import time
from pathlib import Path

PROGRAM = "r1 (0.9): path(x, y) :- edge(x, y).\nr2 (0.8): path(x, z) :- path(x, y), path(y, z).\n"
# --program=trade (s19r): the trade program of the selPQL paper (examples/trade/trade.dl: r1
# symmetric, r3 nonlinear) over a synthetic database of C countries (trade_db)
TRADE = (Path(__file__).resolve().parents[3] / "examples" / "trade" / "trade.dl")


def program(name: str) -> tuple[str, str]:
    """(program text, the relation timed) of ``--program=``."""
    if name == "trade":
        return TRADE.read_text(encoding="utf-8"), "dealsWith"
    return PROGRAM, "path"


def trade_db(countries: int, out: Path, seed: int = 1) -> dict:
    """A trade database: C countries, C products; each country imports and exports two random
    products; C / 2 random ``dealsWith_edb`` pairs. ``r2`` gives ~4 pairs a product, a sparse
    graph that ``r1`` makes symmetric and ``r3`` closes: nearly C x C ``dealsWith`` facts."""
    import random

    rng = random.Random(seed)
    db = out / "db"
    db.mkdir(parents=True, exist_ok=True)
    imports = sorted({(f"k{c}", f"p{rng.randrange(countries)}") for c in range(countries) for _ in range(2)})
    exports = sorted({(f"k{c}", f"p{rng.randrange(countries)}") for c in range(countries) for _ in range(2)})
    deals = sorted({(f"k{rng.randrange(countries)}", f"k{rng.randrange(countries)}") for _ in range(countries // 2)})
    for name, header, rows in (("imports", "country,product", imports), ("exports", "country,product", exports),
                               ("dealsWith_edb", "a,b", deals)):
        (db / f"{name}.csv").write_text(header + "\n" + "".join(f"{a},{b}\n" for a, b in rows), encoding="utf-8")
    return {"countries": countries, "imports": len(imports), "exports": len(exports), "dealsWith_edb": len(deals), "seed": seed}


def worker(work: Path, small: Path, full: bool) -> None:
    """One code tree's figures, as one JSON line on stdout."""
    from selp.engines.spark import run_spark
    from selp.engines.spark_session import get_spark
    from selp.database import load_database
    from selp.language import parse_program
    from selp.language.pattern_parser import parse_pattern
    from selp.language.validate import analyze
    from selp.topk.monoid import get_monoid
    from selp.topk.spark import run_topk_spark
    from selp.topk.task import make_task

    analysis = analyze(parse_program(PROGRAM))
    spark = get_spark("local[2]", {"spark.driver.memory": "2g"})
    sc = spark.sparkContext
    out: dict = {"selp": __import__("selp").__file__}

    def timed(name: str, fn) -> None:
        sc.setJobGroup(name, name)
        t = time.perf_counter()
        extra = fn()
        secs = time.perf_counter() - t
        jobs = len(sc.statusTracker().getJobIdsForGroup(name))
        out[name] = {"seconds": round(secs, 2), "jobs": jobs, **extra}

    def evaluate(db: Path) -> dict:
        r = run_spark(analysis, str(db), spark)
        n, it = r.count("path"), r.iterations
        # read the relation once through Spark, inside the timing: a relation decoded lazily
        # (by its first reader) pays its decoding here, as a user's write or query would
        t = time.perf_counter()
        read = r.frame("path").count()
        read_seconds = time.perf_counter() - t
        r.close()
        assert read == n, (read, n)
        return {"path": n, "iterations": it, "read_seconds": round(read_seconds, 2)}

    timed("warm-up", lambda: evaluate(small / "db"))
    timed("small", lambda: evaluate(small / "db"))  # the N / 4 graph again, warm
    timed("eval", lambda: evaluate(work / "db"))
    if not full:
        spark.stop()
        print("RESULT " + json.dumps(out), flush=True)
        return
    # the new code's rounds with adaptive execution left on (a no-op setting for the old code)
    spark.conf.set("spark.selp.rounds.adaptive", "true")
    timed("eval, rounds.adaptive=true", lambda: evaluate(work / "db"))
    spark.conf.unset("spark.selp.rounds.adaptive")
    types = load_database(analysis, str(small / "db")).types
    task = make_task(analysis, types, get_monoid("confidence"), 1, parse_pattern("path(*, *)"), "path(*, *)")

    def topk() -> dict:
        r = run_topk_spark(task, str(small / "db"), spark)
        n, rounds = r.live_count, r.rounds
        r.close()
        return {"entries": n, "rounds": rounds}

    timed("top-1 (N/4)", topk)
    spark.stop()
    print("RESULT " + json.dumps(out), flush=True)


def _cpu(jvm: int | None) -> float:
    """CPU seconds used so far by this driver process and its JVM (all threads; user + system):
    less sensitive to the machine's load than wall time (s19r). The JVM's from /proc; the
    driver's alone when the JVM's pid is not known."""
    own = time.process_time()
    if jvm is None:
        return own
    try:
        fields = Path(f"/proc/{jvm}/stat").read_text().rsplit(")", 1)[1].split()
        return own + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return own


def serve(work: Path, small: Path, name: str = "nonlinear") -> None:
    """One code tree's warm session driven over stdin (``--alternate``): each line names a run
    (``warm-up``, ``small`` or ``eval``), answered by one ``RESULT`` JSON line on stdout."""
    from selp.engines.spark import run_spark
    from selp.engines.spark_session import get_spark
    from selp.language import parse_program
    from selp.language.validate import analyze

    text, rel = program(name)
    analysis = analyze(parse_program(text))
    spark = get_spark("local[2]", {"spark.driver.memory": "2g"})
    sc = spark.sparkContext
    dbs = {"warm-up": small / "db", "small": small / "db", "eval": work / "db"}
    jvm = getattr(getattr(sc._gateway, "proc", None), "pid", None)  # type: ignore[attr-defined]
    for i, line in enumerate(sys.stdin):
        name = line.strip()
        if name == "quit":
            break
        group = f"{name}-{i}"
        sc.setJobGroup(group, group)
        cpu = _cpu(jvm)
        t = time.perf_counter()
        r = run_spark(analysis, str(dbs[name]), spark)
        n, it = r.count(rel), r.iterations
        read = r.frame(rel).count()
        secs = time.perf_counter() - t
        cpu = _cpu(jvm) - cpu
        r.close()
        assert read == n, (read, n)
        jobs = len(sc.statusTracker().getJobIdsForGroup(group))
        print("RESULT " + json.dumps({"run": name, "seconds": round(secs, 2), "jobs": jobs, "path": n, "iterations": it,
                                             "cpu": round(cpu, 2)}),
              flush=True)
    spark.stop()


def alternate(work: Path, small: Path, old: Path, here: Path, reps: int, warm: int = 0,
              names: tuple[str, ...] = ("small", "eval"), prog: str = "nonlinear") -> dict:
    """Both codes' sessions, their evals run one at a time, the order swapped every repetition.

    ``warm`` repetitions of ``names`` per code run first and are discarded (s19r: after one
    warm-up eval both codes still got faster over the measured repetitions); the summary gives
    each code's median, min and max (wall and CPU) and the median and range of the
    per-repetition ratios (old / new of the same repetition)."""
    procs = {}
    for label, tree in (("old", old), ("new", here)):
        env = dict(os.environ, PYTHONPATH=str(tree))
        cmd = [sys.executable, __file__, "--serve", str(work), str(small), prog]
        procs[label] = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True)

    def ask(label: str, name: str, rep: int) -> dict:
        p = procs[label]
        p.stdin.write(name + "\n")
        p.stdin.flush()
        load = os.getloadavg()[0]
        for line in p.stdout:
            if line.startswith("RESULT "):
                out = {"code": label, "rep": rep, **json.loads(line[7:]), "loadavg": round(load, 2)}
                print(json.dumps(out), flush=True)
                return out
        sys.exit(f"{label} worker failed (exit {p.wait()})")

    runs = [ask(label, "warm-up", -warm - 1) for label in ("old", "new")]
    for rep in range(-warm, reps):
        for label in (("old", "new") if rep % 2 == 0 else ("new", "old")):
            for name in names:
                runs.append(ask(label, name, rep))
    for p in procs.values():
        p.stdin.write("quit\n")
        p.stdin.flush()
        p.wait()

    def median(xs: list[float]) -> float:
        xs = sorted(xs)
        return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2

    def secs(label: str, name: str, key: str = "seconds") -> list[float]:
        return [r[key] for r in runs if r["code"] == label and r["run"] == name and r["rep"] >= 0]

    def jobs(label: str, name: str) -> int:
        return median([r["jobs"] for r in runs if r["code"] == label and r["run"] == name and r["rep"] >= 0])

    summary = {}
    for name in names:
        o, n = secs("old", name), secs("new", name)
        oc, nc = secs("old", name, "cpu"), secs("new", name, "cpu")
        summary[name] = {
            "old": median(o), "new": median(n), "speed-up": round(median(o) / median(n), 2),
            "old_min_max": [min(o), max(o)], "new_min_max": [min(n), max(n)],
            "ratio_per_rep_median": round(median([a / b for a, b in zip(o, n)]), 2),
            "ratio_per_rep_min_max": [round(min(a / b for a, b in zip(o, n)), 2), round(max(a / b for a, b in zip(o, n)), 2)],
            "cpu": {"old": median(oc), "new": median(nc), "speed-up": round(median(oc) / median(nc), 2),
                    "old_min_max": [min(oc), max(oc)], "new_min_max": [min(nc), max(nc)]},
            "jobs": {"old": jobs("old", name), "new": jobs("new", name)},
        }
    return {"reps": reps, "warm": warm, "runs": runs, "median": summary}


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--full" and not a.startswith(("--alternate", "--warm", "--json", "--runs", "--program"))]
    prog = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--program=")), "nonlinear")
    names = tuple(next((a.split("=", 1)[1].split(",") for a in sys.argv[1:] if a.startswith("--runs=")), ["small", "eval"]))
    full = "--full" in sys.argv
    alt = [a for a in sys.argv[1:] if a.startswith("--alternate")]
    warm = [int(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--warm=")]
    json_out = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--json=")]
    out = Path(args[0])
    nodes = int(args[1]) if len(args) > 1 else 340
    base = args[2] if len(args) > 2 else "deaa1b0"
    here = Path(__file__).resolve().parents[3]
    from selp.gen.anchors import generate_graph

    if prog == "trade":
        work, small = out / "trade-work", out / "trade-small"
        stats = trade_db(nodes, work)
        trade_db(nodes // 4, small)
    else:
        work, small = out / "work", out / "small"
        stats = generate_graph(nodes, work)
        generate_graph(nodes // 4, small)
    sha = subprocess.run(["git", "-C", str(here), "rev-parse", "--short", base], capture_output=True, text=True, check=True).stdout.strip()
    old = out / f"old-{sha}"  # per commit: an OUT reused with another BASE (or a moved branch) is not stale
    if not old.exists():
        data = subprocess.run(["git", "-C", str(here), "archive", base, "selp"], capture_output=True, check=True).stdout
        tarfile.open(fileobj=io.BytesIO(data)).extractall(old)
    commit = subprocess.run(["git", "-C", str(here), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    load0 = os.getloadavg()
    if prog != "nonlinear" and not alt:
        sys.exit("--program=trade needs --alternate")
    if alt:
        reps = int(alt[0].split("=", 1)[1]) if "=" in alt[0] else 3
        res = {"mode": "alternate", "program": prog, "graph": stats, "small_nodes": nodes // 4, "base": base, "head": commit,
               "loadavg_start": load0, **alternate(work, small, old, here, reps, warm[0] if warm else 0, names, prog), "loadavg_end": os.getloadavg()}
        (Path(json_out[0]) if json_out else Path(__file__).parent / "results-alternate.json").write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
        print(json.dumps({k: res[k] for k in ("head", "base", "warm", "loadavg_start", "loadavg_end", "median")}, indent=2))
        return
    runs = []
    procs = []
    for label, tree in (("old", old), ("new", here)):
        env = dict(os.environ, PYTHONPATH=str(tree))
        cmd = [sys.executable, __file__, "--worker", str(work), str(small)] + (["--full"] if full else [])
        procs.append((label, subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    for label, p in procs:
        stdout, stderr = p.communicate()
        line = [x for x in stdout.splitlines() if x.startswith("RESULT ")]
        if p.returncode or not line:
            sys.exit(f"{label} worker failed:\n{stderr[-3000:]}")
        runs.append({"code": label, **json.loads(line[0][7:])})
        print(label, json.dumps(runs[-1]), flush=True)
    res = {"full": full, "graph": stats, "small_nodes": nodes // 4, "base": base, "head": commit, "loadavg_start": load0,
           "loadavg_end": os.getloadavg(), "runs": runs}
    (Path(__file__).parent / "results.json").write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(Path(sys.argv[2]), Path(sys.argv[3]), *sys.argv[4:5])
    elif sys.argv[1:2] == ["--worker"]:
        worker(Path(sys.argv[2]), Path(sys.argv[3]), "--full" in sys.argv)
    else:
        main()
