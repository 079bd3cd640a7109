"""selp on a real Spark cluster: a standalone master and two workers on localhost, each a JVM of
its own, the commands run with ``--master spark://...`` and selp shipped to the executors as a
zip (``spark.submit.pyFiles``) -- so the code, its Python dependencies and the checkpoint
directory are proven to work off the driver. Each test costs tens of seconds (a driver JVM per
command): keep them few."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from helpers.orphans import die_with_parent

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
_START_TIMEOUT = 180.0  # seconds for the master and both workers; the machine may be busy


@dataclass
class Cluster:
    """A running standalone cluster and what a driver needs to use it."""

    master: str  # spark://127.0.0.1:PORT
    conf: list[str]  # --conf options for every command: shipped selp, checkpoints, sizes
    checkpoints: Path
    env: dict[str, str]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive_workers(ui_port: int) -> int:
    """ALIVE workers the master's JSON UI lists (0 while the master is not up)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as r:
            state = json.load(r)
    except (OSError, ValueError):
        return 0
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


def _stop(proc: subprocess.Popen) -> None:
    """Stop a daemon started here and what it launched (its own process group: executors and
    their Python workers), politely first."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    except ProcessLookupError:
        pass


def _selp_zip(path: Path) -> Path:
    """The selp package as a zip for the executors' sys.path: Python sources, package data and
    the compiled DTable kernel (which selp.topk.kernel extracts from the zip to load it: the
    partition-local DTable runs it on the executors)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted((ROOT / "selp").rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts and f.suffix not in (".pyc", ".c"):
                z.write(f, f.relative_to(ROOT))
    return path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    """A master and two workers (1 core, 1 GiB each), started with the pyspark package's
    ``spark-class``; torn down however the tests end."""
    import pyspark

    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("the cluster needs Java 17")
    spark_home = Path(pyspark.__file__).parent
    spark_class = str(spark_home / "bin" / "spark-class")
    base = tmp_path_factory.mktemp("cluster")
    env = dict(os.environ, SPARK_HOME=str(spark_home), SPARK_NO_DAEMONIZE="1", PYSPARK_PYTHON=sys.executable)
    # the daemons and so the executors must not find this tree on PYTHONPATH: they get the zip
    daemon_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    port, ui = _free_port(), _free_port()
    master = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []
    logs: list[Path] = []

    def launch(name: str, args: list[str]) -> None:
        log = base / f"{name}.log"
        logs.append(log)
        with open(log, "wb") as out:
            procs.append(
                subprocess.Popen(
                    [spark_class, *args], stdout=out, stderr=subprocess.STDOUT, env=daemon_env, cwd=base,
                    preexec_fn=die_with_parent(),  # own session, and killed with this process
                )
            )

    try:
        launch("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)])
        for i in range(2):
            work = base / f"worker{i}"
            work.mkdir()
            launch(
                f"worker{i}",
                ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                 "--webui-port", str(_free_port()), "--work-dir", str(work), master],
            )
        deadline = time.monotonic() + _START_TIMEOUT
        while _alive_workers(ui) < 2:
            dead = [p for p in procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                tails = "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-2000:]}" for log in logs if log.exists())
                pytest.fail(f"the standalone cluster did not come up ({_alive_workers(ui)} of 2 workers)\n{tails}")
            time.sleep(1.0)
        checkpoints = base / "checkpoints"  # a local path every process of this machine shares
        checkpoints.mkdir()
        conf = [
            f"spark.submit.pyFiles={_selp_zip(base / 'selp.zip')}",
            f"spark.checkpoint.dir={checkpoints}",
            "spark.executor.memory=768m",
            "spark.driver.memory=1g",
        ]
        # commands without --conf (cdss exchange, proql) read the same settings from here
        conf_dir = base / "conf"
        conf_dir.mkdir()
        (conf_dir / "spark-defaults.conf").write_text("".join(f"{c.replace('=', ' ', 1)}\n" for c in conf))
        env["SPARK_CONF_DIR"] = str(conf_dir)
        yield Cluster(master, conf, checkpoints, env)
    finally:
        for p in reversed(procs):  # workers (and their executors) first, then the master
            _stop(p)


def selp(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m selp ARGS`` with this tree first on the path; fails the test on a non-zero exit."""
    run_env = dict(env or os.environ)
    run_env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    r = subprocess.run([sys.executable, "-m", "selp", *args], capture_output=True, text=True, env=run_env, timeout=900)
    assert r.returncode == 0, f"selp {' '.join(args)} failed:\n{r.stderr[-4000:]}"
    return r


def on_cluster(cluster: Cluster, *args: str) -> subprocess.CompletedProcess:
    """A selp command run by the cluster (``--engine spark --master ...`` plus its settings)."""
    conf = [x for c in cluster.conf for x in ("--conf", c)]
    return selp(*args, "--engine", "spark", "--master", cluster.master, *conf, env=cluster.env)


TC_PROGRAM = """
.decl edge(a: int, b: int)
% left-recursive: decomposes on position 0, runs partition-local
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
% nonlinear: global rounds
ntc(x, y) :- edge(x, y).
ntc(x, z) :- ntc(x, y), ntc(y, z).
% labeled nulls built from the partition-local result
far(x, f(x, z)) :- tc(x, z), x < z.
"""


def _graph(db: Path, nodes: int = 40, edges: int = 70) -> None:
    """A deterministic sparse digraph with cycles (a linear congruential walk)."""
    seen, x = set(), 7
    while len(seen) < edges:
        x = (x * 1103515245 + 12345) % (1 << 31)
        a, b = x % nodes, (x // nodes) % nodes
        if a != b:
            seen.add((a, b))
    db.mkdir()
    (db / "edge.csv").write_text("a,b\n" + "".join(f"{a},{b}\n" for a, b in sorted(seen)))


def test_eval_on_the_cluster_agrees_with_the_embedded_engine(cluster, tmp_path):
    prog = tmp_path / "tc.dl"
    prog.write_text(TC_PROGRAM)
    _graph(tmp_path / "db")
    args = ["eval", str(prog), "--db", str(tmp_path / "db"), "--json", "--show", "*"]
    embedded = json.loads(selp(*args, "--engine", "embedded").stdout)
    r = on_cluster(cluster, *args)
    spark = json.loads(r.stdout)
    assert spark["relations"] == embedded["relations"]
    assert spark["relations"]["tc"]["count"] > 100  # a closure worth partitioning
    plan = {tuple(step["relations"]): step for step in spark["plan"]}
    assert plan[("tc",)]["mode"] == "partition-local" and plan[("tc",)]["position"] == 0
    assert plan[("ntc",)]["mode"] == "global rounds" and "nonlinear" in plan[("ntc",)]["reason"]
    assert "plan: stratum 0 [tc] partition-local on position 0" in r.stderr
    # the global rounds cut lineage with reliable checkpoints in the shared directory
    assert any(cluster.checkpoints.rglob("*"))


def _weights(answers: dict) -> dict:
    """Per fact, the weights of its trees in rank order (trees of equal weight may differ)."""
    return {
        json.dumps(a["fact"]): [round(t["weight"], 9) for t in a["trees"]] for a in answers["results"]
    }


def test_topk_with_a_saved_dtable_on_the_cluster_then_trees(cluster, tmp_path):
    args = [
        "topk", str(EXAMPLES / "trade" / "trade.dl"), "--db", str(EXAMPLES / "trade" / "db"),
        "-k", "3", "--pattern", "dealsWith(Cuba, *)", "--format", "json", "-q",
    ]
    embedded = json.loads(selp(*args, "--engine", "embedded").stdout)
    saved = tmp_path / "dtable"
    spark = json.loads(on_cluster(cluster, *args, "--save-dtable", str(saved)).stdout)
    assert _weights(spark) == _weights(embedded)
    assert len(spark["results"]) == 3  # Cuba deals with Cuba, France and Mexico
    # the saved DTable answers without Spark, with exactly the trees the run printed
    trees = json.loads(selp("trees", str(saved), "--format", "json").stdout)
    assert trees["results"] == spark["results"]


PATH_PROGRAM = """
.decl edge(a: int, b: int)
% right-recursive: decomposes on position 1; its DTable is computed partition-local
r1 (0.9): path(x, y) :- edge(x, y).
r2 (0.8): path(x, z) :- edge(x, y), path(y, z).
"""


def test_the_kernel_loads_on_the_executors(cluster, tmp_path):
    """The compiled DTable kernel, shipped inside the selp zip, is loaded by the executors' Python
    workers (extracted from the zip), not replaced by the pure-Python twin."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys\n"
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.master(sys.argv[1]).config('spark.executor.memory', '768m').getOrCreate()\n"
        "def probe(_):\n"
        "    from selp.topk.kernel import compiled_available\n"
        "    import selp\n"
        "    return (compiled_available(), selp.__file__)\n"
        "print(sorted(set(spark.sparkContext.parallelize(range(4), 4).map(probe).collect())))\n"
        "spark.stop()\n"
    )
    env = {k: v for k, v in cluster.env.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, str(script), cluster.master], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    got = eval(r.stdout.strip().splitlines()[-1])  # noqa: S307 - our own probe's printed list
    assert got and all(ok for ok, _ in got), got
    assert all("selp.zip" in path for _, path in got)  # the shipped copy, not this tree


def test_partition_local_topk_on_the_cluster_agrees_with_the_embedded_engine(cluster, tmp_path):
    prog = tmp_path / "path.dl"
    prog.write_text(PATH_PROGRAM)
    db = tmp_path / "db"
    _graph(db, nodes=12, edges=24)
    args = ["topk", str(prog), "--db", str(db), "-k", "3", "--pattern", "path(*, *)", "--format", "json", "-q"]
    embedded = json.loads(selp(*args, "--engine", "embedded").stdout)
    saved = tmp_path / "dtable"
    spark = json.loads(on_cluster(cluster, *args, "--save-dtable", str(saved)).stdout)
    assert _weights(spark) == _weights(embedded) and len(spark["results"]) > 50
    trees = json.loads(selp("trees", str(saved), "--format", "json").stdout)
    assert trees["results"] == spark["results"]


def _bio_with_gus(d: Path) -> Path:
    """A store of the bio example at ``d`` with GUS's ``G`` imported (not yet published)."""
    shutil.copytree(EXAMPLES / "cdss" / "bio", d, ignore=shutil.ignore_patterns(".selp"))
    selp("cdss", "init", str(d))
    selp("cdss", "import", str(d), "--peer", "PGUS", "--relation", "G", str(d / "data" / "PGUS" / "G.csv"))
    return d


def test_cdss_exchange_and_proql_on_the_cluster_agree_with_the_embedded_engine(cluster, tmp_path):
    """The bio example's walkthrough, exchanged once by the cluster and once by the embedded
    engine: the same instance (labeled nulls included) and the same ProQL answers."""
    stores = {}
    for engine in ("embedded", "spark"):
        d = _bio_with_gus(tmp_path / engine / "bio")
        selp("cdss", "edit", str(d), "--peer", "PuBio", "+U(2, 5)")
        for peer in ("PGUS", "PuBio"):
            selp("cdss", "publish", str(d), "--peer", peer)
        extra = ["--master", cluster.master] if engine == "spark" else []
        r = selp("cdss", "exchange", str(d), "--peer", "PBioSQL", "--engine", engine, *extra, env=cluster.env)
        assert f", {engine})" in r.stdout + r.stderr  # the engine that ran the epoch says so
        stores[engine] = d
    query = ["--peer", "PBioSQL", "U", "--with-nulls", "--format", "json"]
    a = json.loads(selp("cdss", "query", str(stores["embedded"]), *query).stdout)
    b = json.loads(selp("cdss", "query", str(stores["spark"]), *query).stdout)
    assert a == b and a  # labeled nulls included
    q = ["FOR [U $x] INCLUDE PATH [$x] <-+ [] RETURN $x", "--peer", "PBioSQL", "--format", "json"]
    local = json.loads(selp("proql", str(stores["embedded"]), *q, "--engine", "embedded").stdout)
    remote = json.loads(selp("proql", str(stores["spark"]), *q, "--engine", "spark", "--master", cluster.master, env=cluster.env).stdout)
    assert remote == local and local


def test_a_one_shot_explain_on_the_cluster_agrees_with_the_embedded_engine(cluster, tmp_path):
    """A user's ``selp explain`` of one fact, unchanged, with ``--master``: goal-directed (the
    demand partition-local, the pattern root ranked in one pass) on the cluster's executors,
    the same trees as the embedded engine; a cluster driver gets no C1 JVM and no class archive."""
    prog = tmp_path / "path.dl"
    prog.write_text(PATH_PROGRAM)
    db = tmp_path / "db"
    _graph(db, nodes=12, edges=24)
    embedded = selp("explain", str(prog), "--db", str(db), "-k", "3", "path(0, 1)", "--format", "json", "--engine", "embedded")
    r = on_cluster(cluster, "explain", str(prog), "--db", str(db), "-k", "3", "path(0, 1)", "--format", "json")
    spark, local = json.loads(r.stdout), json.loads(embedded.stdout)
    assert _weights(spark) == _weights(local) and len(spark["results"]) == 1  # path(0, 1) holds here
    assert "goal-directed" in r.stderr and "partition-local on position 1" in r.stderr


def test_cdss_adapt_on_the_cluster_agrees_with_recomputation(cluster, tmp_path):
    """``--strategy adapt`` run by the cluster after a mapping is added ([GI12]): the Z-relations
    are the cluster's DataFrames; the instance equals the embedded engine's recomputation."""
    stores = {}
    for engine in ("embedded", "spark"):
        d = _bio_with_gus(tmp_path / engine / "bio")
        selp("cdss", "publish", str(d), "--peer", "PGUS")
        extra = ["--master", cluster.master] if engine == "spark" else []
        selp("cdss", "exchange", str(d), "--peer", "PBioSQL", "--engine", engine, *extra, env=cluster.env)
        toml = d / "cdss.toml"
        text = toml.read_text()
        assert '"m4: B(i, c), U(n, c) -> B(i, n)",' in text
        toml.write_text(text.replace('"m4: B(i, c), U(n, c) -> B(i, n)",', '"m4: B(i, c), U(n, c) -> B(i, n)",\n  "m5: G(i, c, n) -> U(c, n)",'))
        strategy = "adapt" if engine == "spark" else "recompute"
        r = selp("cdss", "exchange", str(d), "--peer", "PBioSQL", "--engine", engine, "--strategy", strategy, *extra, env=cluster.env)
        assert f", {strategy}, {engine})" in r.stdout  # adapted (not recomputed) by the cluster
        stores[engine] = d
    for rel in ("U", "B"):
        query = ["--peer", "PBioSQL", rel, "--with-nulls", "--format", "json"]
        a = json.loads(selp("cdss", "query", str(stores["embedded"]), *query).stdout)
        b = json.loads(selp("cdss", "query", str(stores["spark"]), *query).stdout)
        assert a == b and a
