"""``selp bench proql``: ProQL on generated SWISS-PROT-like CDSSs ([Kar09] ch. 8).

**Workload** (:mod:`selp.gen.proql`). The peers' relations come from :mod:`selp.gen.swissprot`
(Zipf-skewed projections of a 25-attribute universal relation, key ``ac``; 1-4 relations per peer
where the thesis used exactly 2); its full mappings (``full_mapping``: all of the source peer's
relations joined on the key, into all of the target's) are laid out on the chapter-8 topologies,
with data flowing towards a *root* peer whose first relation the query asks about:

* ``chain`` — ``P0 -> P1 -> ... -> P(n-1)``, the root ``P(n-1)``, the leaf ``P0``.
* ``branched`` — half the peers in a chain ending at the root, the other half in two equal
  branches both feeding the chain's first peer (two leaves).
* ``tree`` — a 4-ary in-tree: every peer feeds its parent, the root is the last peer; the
  leaves are the peers without children.

``data`` places ``base`` entries at the ``leaves``, at the leaves and the ``middle`` (the peers
half-way along the longest path; ``leaves+middle``), or at ``every`` peer (entries disjoint
across peers). The store is built by ``selp cdss init/import/publish`` and one exchange
(recompute, on the default embedded engine), exactly as a user would.

**Query** (the chapter's root query)::

    FOR [R<root>_0 $x] INCLUDE PATH [$x] <-+ [] RETURN $x

timed as a *projection* (the bindings and the size of G′; the thesis found annotation to cost
about as much as projection alone) on the Spark engine, ASRs off and on, and on the in-memory
graph that the other engines use (column ``local_s``; its time includes reading the epoch into
memory). ``evaluate`` adds an
``EVALUATE <semiring> OF`` and times projection plus annotation instead. Reported per
configuration: tuples and provenance rows in the epoch, the exchange time, the ASR build time
and rows, each query's median time over ``repeat`` runs (after ``warmup`` untimed ones), the
rounds of the ``<-+`` fixpoint, and ``ok``: every engine returns the same root tuples and G′ of
the same size.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any, Callable

from selp.bench.results import machine_info
from selp.gen.proql import PLACEMENTS, TOPOLOGIES, generate_proql
from selp.gen.swissprot import SwissProtCDSS
from selp.outfile import write_text

COLUMNS = (
    "topology", "peers", "data", "base", "tuples", "prov_rows", "exchange_s", "asrs", "asr_rows", "asr_build_s",
    "local_s", "spark_s", "spark_asr_s", "rounds", "rounds_asr", "answers", "graph_nodes", "ok",
)
Say = Callable[[str], None]


def build_store(g: SwissProtCDSS, out: Path) -> tuple[Path, float]:
    """Write, init, import, publish and exchange (default engine) -- what ``selp cdss init``,
    ``import``, ``publish`` and ``exchange`` do; returns (dir, exchange seconds)."""
    import shutil

    from selp.cdss.edits import apply_batch, read_csv_requests
    from selp.cdss.exchange import exchange
    from selp.cdss.store import Store
    from selp.engines.registry import DEFAULT

    shutil.rmtree(out, ignore_errors=True)  # a fresh store every run
    g.write(out)
    with Store.init(out) as store:
        for p, rels in enumerate(g.relations):
            if not g.entries[p]:
                continue
            for r in rels:
                csv = out / "data" / f"P{p}" / f"{r.name}.csv"
                requests = read_csv_requests(store, f"P{p}", r.name, csv, "+")
                if not requests:
                    raise RuntimeError(f"{csv}: no data rows")
                apply_batch(store, f"P{p}", requests, f"import {r.name} {csv}")
            store.publish(f"P{p}")
    t0 = time.perf_counter()  # opening the store is part of an exchange, as in the command
    with Store.open(out) as store:
        exchange(store, f"P{g.peers - 1}", DEFAULT, "recompute")
    return out, time.perf_counter() - t0


def _timed(fn: Callable[[], Any], repeat: int, warmup: int) -> tuple[float, Any]:
    for _ in range(warmup):  # Spark's first run of a plan shape is slower (the thesis saw it too)
        fn()
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def run_config(
    spark, topology: str, n: int, data: str, base: int, work: Path, repeat: int, warmup: int, width: int,
    evaluate: str | None, say: Say,
) -> dict[str, Any]:
    """Build one configuration and time the root query on every engine (module docstring)."""
    import pyarrow.dataset as ds

    from selp.cdss.proql.api import run_local, spark_query
    from selp.cdss.proql.asr import build_asrs
    from selp.cdss.proql.evaluate import project
    from selp.cdss.proql.graph import load_graph
    from selp.cdss.proql.parser import parse_query
    from selp.cdss.store import Store

    g = generate_proql(topology, n, base, data)
    d, ex_s = build_store(g, work / f"{topology}-{n}-{data.replace('+', '_')}-{base}")
    root = g.relations[n - 1][0].name
    q = f"FOR [{root} $x] INCLUDE PATH [$x] <-+ [] RETURN $x"
    if evaluate:
        q = f"EVALUATE {evaluate} OF {{ {q} }}"
    row: dict[str, Any] = {"topology": topology, "peers": n, "data": data, "base": base, "exchange_s": round(ex_s, 2)}
    with Store.open(d) as st:
        epoch = st.last_exchange().epoch
        row["tuples"] = st.exchange(epoch).stats.get("tuples")
        row["prov_rows"] = sum(
            ds.dataset(str(st.epoch_dir(epoch) / f"P_{m.name}.parquet"), format="parquet").count_rows() for m in st.compiled.cdss.mappings
        )
    say(f"{topology} {n} peers, data at {data}: {row['tuples']} tuples, exchange {ex_s:.1f}s")

    def on_spark(asr: bool):
        r = spark_query(str(d), q, spark=spark, use_asrs=asr, annotate=bool(evaluate))
        answers = {x[0] for x in r.bindings.collect()}
        return answers, r.gnodes.count(), r.stats

    def on_local():
        if evaluate:
            r = run_local(str(d), q)
            return {str(x[0]) for x in r.rows}, len(r.graph.nodes)
        # projection only, as on Spark: the default POLYNOMIAL would expand every derivation
        # (a mapping with two inputs doubles the expression per level: 2^depth terms' text)
        with Store.open(d) as st:
            graph, _ = load_graph(st)
        rows, sub = project(parse_query(q), graph)
        return {str(x[0]) for x in rows}, len(sub.nodes)

    local_s, (local_ans, local_nodes) = _timed(on_local, repeat, warmup)
    spark_s, (ans, nodes, stats) = _timed(lambda: on_spark(False), repeat, warmup)
    with Store.open(d) as st:
        t0 = time.perf_counter()
        entries = build_asrs(st, spark, width=width)
        row["asr_build_s"] = round(time.perf_counter() - t0, 2)
    row["asrs"] = len(entries)
    row["asr_rows"] = sum(e["rows"] for e in entries)
    asr_s, (ans_asr, nodes_asr, stats_asr) = _timed(lambda: on_spark(True), repeat, warmup)
    row.update(
        local_s=round(local_s, 2), spark_s=round(spark_s, 2), spark_asr_s=round(asr_s, 2),
        rounds=max((k for w, k in stats.rounds if "<-+" in w), default=0),
        rounds_asr=max((k for w, k in stats_asr.rounds if "<-+" in w), default=0),
        answers=len(local_ans), graph_nodes=local_nodes,
        ok=local_ans == ans == ans_asr and local_nodes == nodes == nodes_asr,
    )
    say(f"  local {local_s:.2f}s, spark {spark_s:.2f}s ({row['rounds']} rounds), with {len(entries)} ASR(s)"
        f" {asr_s:.2f}s ({row['rounds_asr']} rounds), ok={row['ok']}")
    return row


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(str(r.get(c, "")) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def bench_proql(
    configs: list[tuple[str, int, str]], base: int, out_dir: str | Path, repeat: int = 1, warmup: int = 0, width: int = 8,
    evaluate: str | None = None, master: str | None = None, say: Say = lambda m: None,
) -> list[dict[str, Any]]:
    """Run ``(topology, peers, data)`` configurations; writes OUT/results.json and results.md."""
    from selp.engines.spark_session import get_spark

    out = Path(out_dir)
    work = out / "data"
    work.mkdir(parents=True, exist_ok=True)
    spark = get_spark(master)
    say("warm-up (not recorded): chain of 3 peers")
    run_config(spark, "chain", 3, "leaves", 5, work, 1, 0, width, evaluate, lambda m: None)
    rows = []
    for topology, n, data in configs:
        rows.append(run_config(spark, topology, n, data, base, work, repeat, warmup, width, evaluate, say))
        write_text(out / "results.json", json.dumps(rows, indent=2) + "\n")
    write_text(out / "results.md", markdown(rows) + "\n")
    return rows


def parse_configs(topologies: str, peers: str, data: str) -> list[tuple[str, int, str]]:
    """The cross product of comma-separated topologies, peer counts and data placements."""
    ts = [t.strip() for t in topologies.split(",") if t.strip()]
    ds_ = [x.strip() for x in data.split(",") if x.strip()]
    for t in ts:
        if t not in TOPOLOGIES:
            raise ValueError(f"unknown topology {t!r} (choose {', '.join(TOPOLOGIES)})")
    for x in ds_:
        if x not in PLACEMENTS:
            raise ValueError(f"unknown data placement {x!r} (choose {', '.join(PLACEMENTS)})")
    try:
        ns = [int(x) for x in peers.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--peers expects comma-separated integers, got {peers!r}") from None
    if not ns or min(ns) < 2:
        raise ValueError(f"--peers expects integers >= 2, got {peers!r}")
    return [(t, n, x) for t in ts for x in ds_ for n in ns]


def parse_patterns(patterns: str, peers: str) -> list[tuple[str, int, str]]:
    """``TOPOLOGY:DATA,...`` (or ``all``: every topology with every placement) times the peers."""
    if patterns.strip() == "all":
        pairs = [(t, x) for t in TOPOLOGIES for x in PLACEMENTS]
    else:
        pairs = []
        for item in patterns.split(","):
            t, sep, x = item.strip().partition(":")
            if not sep:
                raise ValueError(f"--patterns for proql are TOPOLOGY:DATA (e.g. chain:leaves), got {item!r}")
            pairs.append((t, x))
    out = []
    for t, x in pairs:
        out += parse_configs(t, peers, x)
    return out


def bench_cli(
    peers: str, scales: str | None, patterns: str, repeat: int, warmup: int, master: str | None, out_dir: str,
    command: str | None, say: Say,
) -> str:
    """``selp bench proql``: ``--patterns TOPOLOGY:DATA,...``, ``--peers``, ``--scales`` (base
    entries per data-holding peer, default 100); writes OUT/results.json, OUT/results.md and
    OUT/machine.json; returns the Markdown table."""
    from selp.errors import SelpError

    try:
        configs = parse_patterns(patterns, peers)
        base = int(scales) if scales else 100
    except ValueError as err:
        raise SelpError(str(err)) from None
    machine = machine_info()
    import os

    machine["loadavg_at_start"] = [round(x, 2) for x in os.getloadavg()]
    machine["command"] = command
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    write_text(Path(out_dir) / "machine.json", json.dumps(machine, indent=2) + "\n")
    t0 = time.perf_counter()
    rows = bench_proql(configs, base, out_dir, repeat, warmup, master=master, say=say)
    say(f"total {time.perf_counter() - t0:.0f}s")
    return markdown(rows)


def main(argv: list[str] | None = None) -> None:
    import sys

    ap = argparse.ArgumentParser(prog="python -m selp.bench.proql", description=__doc__.splitlines()[0])
    ap.add_argument("--topologies", default="chain")
    ap.add_argument("--peers", default="10,25,50,100")
    ap.add_argument("--data", default="leaves")
    ap.add_argument("--base", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=0)
    ap.add_argument("--width", type=int, default=8)
    ap.add_argument("--evaluate", default=None)
    ap.add_argument("--master", default=None)
    ap.add_argument("--out", default="bench-out/proql")
    a = ap.parse_args(argv)
    rows = bench_proql(parse_configs(a.topologies, a.peers, a.data), a.base, a.out, a.repeat, a.warmup, a.width, a.evaluate, a.master,
                       lambda m: print(m, file=sys.stderr, flush=True))
    print(markdown(rows))


if __name__ == "__main__":
    main()
