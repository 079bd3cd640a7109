"""``selp bench``: the benchmarks, one subcommand per entry point of the bench library.

* ``iris``, ``amie``, ``explain``, ``tc`` (and ``topk``, the earlier top-k benchmark): semi-naive
  vs selective top-k vs full provenance (:func:`selp.bench.harness.run_bench`);
* ``instrument``: instrumentation alone (:mod:`selp.bench.instrument`);
* ``cdss``: update exchange on generated CDSSs (:mod:`selp.bench.cdss`);
* ``bidir``: unidirectional vs bidirectional mappings and deletion policies (:mod:`selp.bench.bidir`);
* ``proql``: ProQL on chapter 8's topologies (:mod:`selp.bench.proql`);
* ``anchors``: whole CLI processes beside DuckDB and Nemo (:mod:`selp.bench.anchors`);
* ``adapt``: adapting instances after mapping changes vs recomputation (:mod:`selp.bench.adapt`);
* ``spark``: Spark eval and top-k ratios in one warm session (:mod:`selp.bench.spark_ratios`).

Each subcommand has only the options its benchmark reads. A name that is none of them is a
one-line error (exit 1) listing them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable

import click

from selp.cli.params import IntList
from selp.cli.root import say_printer, start_spark
from selp.errors import SelpError, echo
from selp.outfile import write_text


class _BenchGroup(click.Group):
    """``selp bench NAME``: an unknown NAME is a user error naming the benchmarks, in the order
    they were registered."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            raise SelpError(f"unknown dataset {args[0]!r} (choose {', '.join(self.commands)})")
        return super().resolve_command(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # registration order: the datasets, then the other benchmarks


@click.group(name="bench", cls=_BenchGroup)
def bench() -> None:
    """Benchmarks: semi-naive vs selective top-k vs full provenance on a DATASET (iris, amie,
    explain, tc), instrumentation, CDSS update exchange, ProQL, and the anchors.

    \b
    Examples:
      selp bench iris --scales 10000,50000 --patterns p1,p3 -k 3 --engine embedded,reference
      selp bench tc --scales 100000 --patterns p10 -k 1,3,7 --engine embedded,spark --repeat 3
      selp bench amie --scales 20000 --timeout 120 --memory-cap 4096 --out results/amie
      selp bench instrument --repeat 5
      selp bench cdss --peers 5,10,20 --scales 200 --fractions 0.1,0.3,0.5 --out results/cdss
      selp bench anchors --nodes 1000 --repeat 3
    """


def _command_line() -> str | None:
    """The command as typed, recorded with the results (None when not run as ``selp bench``)."""
    return "selp bench " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["bench"] else None


def _engine_list(engines: tuple[str, ...]) -> list[str]:
    """``--engine`` values, repeatable or comma-separated."""
    return [e.strip() for e in ",".join(engines).split(",") if e.strip()]


def _int_list(text: str, option: str, minimum: int) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SelpError(f"{option} expects comma-separated integers, got {echo(text)}") from None
    if not values or min(values) < minimum:
        raise SelpError(f"{option} expects integers >= {minimum}, got {echo(text)}")
    return values


# -- semi-naive vs selective top-k vs full provenance (selp.bench.harness) ---------------------
def _options(*opts: Callable) -> Callable:
    """Apply click options in the order given (the order ``--help`` lists them)."""
    def apply(f: Callable) -> Callable:
        for o in reversed(opts):
            f = o(f)
        return f

    return apply


_REPEAT = click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True, help="Timed runs per configuration (after --warmup untimed ones); the median is reported.")
_WARMUP = click.option("--warmup", type=click.IntRange(min=0), default=1, show_default=True, help="Untimed runs before the timed ones.")
_TIMEOUT = click.option("--timeout", "timeout_s", type=click.FloatRange(min=0.1), default=600, show_default=True, help="Seconds per run before the configuration is reported as 'did not finish: time cap'.")
_SEED = click.option("--seed", type=int, default=0, show_default=True)
_QUIET = click.option("-q", "--quiet", is_flag=True, help="No progress on stderr.")
_MASTER = click.option("--master", default=None, help="Spark master URL.")
_PEERS = click.option("--peers", default="5,10,20", show_default=True, help="Comma-separated numbers of peers.")

# the harness's options, in the order --help lists them; topk fixes --patterns and --modes
_HARNESS_OPTIONS = {
    "scales": click.option("--scales", default=None, help="Comma-separated scales (approximate output tuples) [default: the dataset's, e.g. 10000,50000,200000]."),
    "patterns": click.option("--patterns", default="all", show_default=True, help="Comma-separated pattern names of datasets/DATASET.patterns, or all."),
    "ks": click.option("-k", "ks", default="1,3,7", show_default=True, help="Comma-separated k values for top-k (full provenance runs at k=3 if listed, else the first)."),
    "engines": click.option("--engine", "--engines", "engines", multiple=True, help="embedded, reference and/or spark (repeatable or comma-separated) [default: embedded]."),
    "modes": click.option("--modes", default="semi-naive,top-k,full-provenance", show_default=True, help="Which of semi-naive, top-k, full-provenance to run."),
    "repeat": _REPEAT,
    "warmup": _WARMUP,
    "timeout_s": _TIMEOUT,
    "memory_cap": click.option("--memory-cap", "memory_cap", type=click.FloatRange(min=1), default=8192, show_default=True, help="MiB of resident memory per local configuration before 'did not finish: memory cap'."),
    "out_dir": click.option("--out", "out_dir", type=click.Path(file_okay=False), default="bench-out", show_default=True, help="Where results.csv/results.json and the plots go; generated data is cached in OUT/data."),
    "master": _MASTER,
    "monoid": click.option("--monoid", default="confidence", show_default=True, help="Ranking monoid for top-k and full provenance."),
    "seed": _SEED,
    "no_plots": click.option("--no-plots", is_flag=True, help="Do not draw the PNG figures."),
    "quiet": _QUIET,
}

_HARNESS_HELP = """For each scale the dataset is generated (cached in OUT/data), then per engine: plain
    semi-naive evaluation, top-k for each pattern and k, and the full-provenance baseline (every
    rule instance materialised, then the same query), each after a warm-up. Writes
    OUT/results.csv, OUT/results.json and the figures OUT/fig5_*.png (time vs output size) and
    OUT/fig6_*.png (time vs k); prints a Markdown table; progress goes to stderr."""


def _run_harness(dataset: str, scales: str | None, patterns: str, ks: str, engines: tuple[str, ...], modes: str, repeat: int,
                 warmup: int, timeout_s: float, memory_cap: float, out_dir: str, master: str | None, monoid: str, seed: int,
                 no_plots: bool, quiet: bool) -> None:
    """Run :func:`selp.bench.harness.run_bench`, print its table, write its files and figures."""
    from selp.bench.harness import (
        MODES,
        format_markdown,
        load_patterns,
        plot,
        run_bench,
        save,
    )
    from selp.bench.results import machine_info
    from selp.engines.registry import DEFAULT, canonical, get_engine

    say = say_printer(quiet)
    scale_list = _int_list(scales, "--scales", 4) if scales else None
    k_values = _int_list(ks, "-k", 1)
    chosen = [canonical(e) for e in _engine_list(engines)] or [DEFAULT]
    mode_list = [m.strip() for m in modes.split(",") if m.strip()]
    for m in mode_list:
        if m not in MODES:
            raise SelpError(f"--modes: unknown mode {m!r} (choose {', '.join(MODES)})")
    load_patterns(dataset, patterns)  # a bad name fails before any work
    machine = machine_info()
    machine["loadavg_at_start"] = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    say(f"machine: {machine.get('nproc')} cores, {machine.get('mem_total_gib')} GiB, load average {machine['loadavg_at_start']}")
    spark = start_spark(master, {}, quiet) if any(get_engine(e).needs_spark_session for e in chosen) else None
    if spark is not None:
        machine["spark_master"] = spark.sparkContext.master
    rows = run_bench(dataset, scale_list, patterns, k_values, chosen, mode_list, repeat, warmup, timeout_s, memory_cap,
                     Path(out_dir) / "data", spark, say, seed, monoid)
    click.echo(format_markdown(rows))
    for p in save(rows, out_dir, machine, _command_line()):
        say(f"wrote {p}")
    if not no_plots:
        for p in plot(rows, out_dir, say):
            say(f"wrote {p}")


def _dataset_command(dataset: str) -> click.Command:
    """``selp bench DATASET``: the harness on one of the four datasets."""

    @click.command(name=dataset, help=f"""Semi-naive vs selective top-k vs full provenance on {dataset} (datasets/{dataset}.dl).

    {_HARNESS_HELP}

    \b
    Example:
      selp bench {dataset} --scales 20000 --patterns all -k 3 --engine embedded,reference
    """)
    @_options(*_HARNESS_OPTIONS.values())
    def command(**opts: Any) -> None:
        _run_harness(dataset, **opts)

    return command


@click.command(name="topk")
@_options(*(o for name, o in _HARNESS_OPTIONS.items() if name not in ("patterns", "modes")))
def topk_cmd(**opts: Any) -> None:
    """The earlier top-k benchmark: `selp bench tc --patterns p10 --modes semi-naive,top-k`.

    \b
    Example:
      selp bench topk --scales 100000 -k 1,3,7
    """
    _run_harness("tc", patterns="p10", modes="semi-naive,top-k", **opts)


# -- the other benchmarks ------------------------------------------------------------------
@click.command(name="instrument")
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True, help="Timed runs per pattern, optimised and not; the median is reported.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="bench-out", show_default=True, help="Where results.csv/results.json go.")
@_QUIET
def instrument_cmd(repeat: int, out_dir: str, quiet: bool) -> None:
    """Instrumentation alone (no data), for every named pattern of every dataset.

    \b
    Example:
      selp bench instrument --repeat 5
    """
    from selp.bench.instrument import bench_instrument, format_instrument_table
    from selp.bench.results import machine_info, write_results

    say = say_printer(quiet)
    rows = bench_instrument(repeat=repeat, say=say)
    click.echo(format_instrument_table(rows))
    for p in write_results(rows, out_dir, machine_info()):
        say(f"wrote {p}")


@click.command(name="cdss")
@_PEERS
@click.option("--scales", default=None, help="Comma-separated base entries per peer [default: 200].")
@click.option("--fractions", default="0.1,0.3,0.5", show_default=True, help="Comma-separated fractions of entries deleted.")
@click.option("--fanout", default="1", show_default=True, help="Incoming mappings per peer, N or LO-HI.")
@click.option("--topology", type=click.Choice(["chain", "tree", "random"]), default="chain", show_default=True, help="Spanning tree of the mappings.")
@click.option("--engine", "--engines", "engines", multiple=True, help="Engines (repeatable or comma-separated) [default: embedded].")
@_SEED
@_TIMEOUT
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="bench-out", show_default=True, help="Where results.csv/results.json go.")
@_QUIET
def cdss_cmd(peers: str, scales: str | None, fractions: str, fanout: str, topology: str, engines: tuple[str, ...], seed: int,
             timeout_s: float, out_dir: str, quiet: bool) -> None:
    """Update exchange on generated SWISS-PROT-like CDSSs (selp.bench.cdss): initial build,
    10% insertion and deletions by provenance, DRed and recomputation.

    \b
    Example:
      selp bench cdss --peers 5,10,20 --scales 200 --fractions 0.1,0.3,0.5 --out results/cdss
    """
    from selp.bench.cdss import bench_cdss, markdown, parse_list, save
    from selp.engines.registry import DEFAULT

    say = say_printer(quiet)
    chosen = _engine_list(engines) or [DEFAULT]
    try:
        peer_list, fraction_list = parse_list(peers, "--peers", int), parse_list(fractions, "--fractions", float)
        scale_values = parse_list(scales, "--scales", int) if scales else [200]
        rows = bench_cdss(peer_list, scale_values, fraction_list, fanout=fanout, topology=topology, seed=seed,
                          timeout_s=timeout_s, engine=",".join(chosen), say=say)
    except ValueError as err:
        raise SelpError(str(err)) from None
    click.echo(markdown(rows))
    params = {"peers": peer_list, "scales": scale_values, "fractions": fraction_list, "fanout": fanout, "topology": topology, "seed": seed, "timeout_s": timeout_s}
    for p in save(rows, out_dir, _command_line(), params):
        say(f"wrote {p}")


@click.command(name="bidir")
@click.option("--peers", default="3,5,8", show_default=True, help="Comma-separated numbers of peers.")
@click.option("--scales", default="100", show_default=True, help="Base entries per peer (one value).")
@click.option("--delete-fraction", type=click.FloatRange(min=0, max=1), default=0.1, show_default=True, help="Share of every peer's entries deleted.")
@click.option("--engine", default="embedded", show_default=True, help="Engine: embedded or reference.")
@_SEED
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="bench-out/bidir", show_default=True, help="Where table.md, results.json/csv and the plots go.")
@_QUIET
def bidir_cmd(peers: str, scales: str, delete_fraction: float, engine: str, seed: int, out_dir: str, quiet: bool) -> None:
    """[Kar09] §6.4.7 (selp.bench.bidir): solution size and time for unidirectional vs
    bidirectional mappings, and deletion propagation with side effects tolerated or avoided.

    \b
    Example:
      selp bench bidir --peers 3,5,8 --scales 100 --out results/bidir
    """
    from selp.bench.bidir import bench_bidir, markdown, save

    say = say_printer(quiet)
    from selp.engines.registry import get_engine

    if get_engine(engine).needs_spark_session:  # an unknown name raises a one-line error
        # the benchmark evaluates in memory, in this process: an engine on a Spark session has no
        # such path
        raise SelpError(f"--engine: {echo(engine)} is not supported here (choose one without a Spark session)")
    peer_list, base = _int_list(peers, "--peers", 1), _int_list(scales, "--scales", 1)
    if len(base) != 1:
        raise SelpError(f"--scales expects one value here, got {echo(scales)}")
    rows = bench_bidir(peer_list, base[0], delete_fraction, engine, seed, say)
    click.echo(markdown(rows), nl=False)
    params = {"peers": peer_list, "base": base[0], "delete_fraction": delete_fraction, "engine": engine, "seed": seed, "command": _command_line()}
    for p in save(rows, out_dir, params):
        say(f"wrote {p}")


@click.command(name="proql")
@click.option("--patterns", default="all", show_default=True, help="Comma-separated TOPOLOGY:DATA (e.g. chain:leaves), or all.")
@_PEERS
@click.option("--scales", default=None, help="Base entries per data-holding peer [default: 100].")
@_REPEAT
@_WARMUP
@_MASTER
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="bench-out", show_default=True, help="Where results.json, results.md and machine.json go.")
@_QUIET
def proql_cmd(patterns: str, peers: str, scales: str | None, repeat: int, warmup: int, master: str | None, out_dir: str, quiet: bool) -> None:
    """ProQL on chapter 8's topologies (selp.bench.proql): the root query on Spark, with
    and without access support relations, and on the in-memory graph.

    \b
    Example:
      selp bench proql --patterns chain:leaves --peers 10,25,50,100 --scales 20 --repeat 1 --warmup 0
    """
    from selp.bench.proql import bench_cli

    click.echo(bench_cli(peers, scales, patterns, repeat, warmup, master, out_dir, _command_line(), say_printer(quiet)))


@click.command(name="anchors")
@click.option("--nodes", default=None, help="Comma-separated graph sizes (nodes; 3N edges) [default: 1000].")
@click.option("--engine", "--engines", "engines", multiple=True, help="The engines of `selp eval`, among embedded, reference, spark (repeatable or comma-separated) [default: embedded,reference].")
@_REPEAT
@click.option("--warmup", type=click.IntRange(min=0), default=0, show_default=True, help="Untimed runs before the timed ones.")
@_TIMEOUT
@click.option("--memory-cap", "memory_cap", type=click.FloatRange(min=1), default=None, help="MiB of resident memory per run [default: 12288].")
@click.option("--skip-topk", is_flag=True, help="No topk/explain runs.")
@click.option("--seed", type=int, default=None, help="Seed of the random graph [default: 1].")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None, help="Where the tables and results go [default: datasets/results/anchors].")
@_QUIET
def anchors_cmd(nodes: str | None, engines: tuple[str, ...], repeat: int, warmup: int, timeout_s: float, memory_cap: float | None,
                skip_topk: bool, seed: int | None, out_dir: str | None, quiet: bool) -> None:
    """Whole `selp eval/topk/explain` processes beside DuckDB's recursive CTE and Nemo on one
    random graph, path counts checked (selp.bench.anchors).

    \b
    Example:
      selp bench anchors --nodes 1000 --repeat 3
    """
    from selp.bench.anchors import DEFAULT_MEMORY_CAP_MB, DEFAULT_OUT, DEFAULT_SEED
    from selp.bench.anchors import cli as anchors_cli

    try:
        problems = anchors_cli(nodes, engines, repeat, warmup, timeout_s, DEFAULT_MEMORY_CAP_MB if memory_cap is None else memory_cap,
                               skip_topk, DEFAULT_SEED if seed is None else seed, DEFAULT_OUT if out_dir is None else out_dir,
                               _command_line(), say_printer(quiet), click.echo)
    except ValueError as err:
        raise SelpError(str(err)) from None
    if problems:
        raise SelpError(f"path counts disagree ({len(problems)}): {problems[0]}")


@click.command(name="maintain")
@click.option("--workloads", default="reachable,shortest,regions", show_default=True, help="Comma-separated: reachable, shortest, shortest-multi (latency and hops: Multi AggSel; transit-stub), regions (sensor grid).")
@click.option("--strategies", default="absorption-bdd,absorption-monomials,dred,recompute", show_default=True, help="Comma-separated maintenance strategies.")
@click.option("--deletions", type=click.IntRange(min=0), default=10, show_default=True, help="Base tuples deleted one at a time after the insert-all build.")
@click.option("--stub-extra", type=IntList(0), default="8", show_default=True, help="Extra links per stub domain beyond a spanning tree (8: the paper's ~400 directed links; fewer: sparser); comma-separated for several densities.")
@click.option("--grid-k", type=IntList(1), default="20", show_default=True, help="The sensors' range in metres for the regions workload (20: 12 neighbours, 15: 8, 10: 4); comma-separated for several densities.")
@click.option("--orders/--no-orders", default=True, show_default=True, help="With absorption-bdd: also build the BDDs in a random arrival order, to compare with the depth-first one.")
@click.option("--mixed", type=click.IntRange(min=0), default=0, show_default=True, help="Rounds of a mixed stream after the deletions: each deletes a random link, then inserts a new or re-inserted one (0: none).")
@click.option("--latencies", type=click.Choice(["paper", "random"]), default="paper", show_default=True, help="Transit-stub link latencies: the paper's 50/10/2 ms by kind, or random 1-100 ms (cheapest paths then differ from fewest-hop ones).")
@_SEED
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="bench-out/maintain", show_default=True, help="Where results.csv/results.json and the generated data go.")
@_QUIET
def maintain_cmd(workloads: str, strategies: str, deletions: int, stub_extra: list[int], grid_k: list[int], orders: bool, mixed: int, latencies: str,
                 seed: int, out_dir: str, quiet: bool) -> None:
    """Incremental view maintenance: absorption provenance vs DRed vs recomputation.

    \b
    Example:
      selp bench maintain --workloads reachable --stub-extra 1 --deletions 10 --out results/maintain
    """
    from selp.bench.maintain import STRATEGIES, WORKLOADS, run

    ws = [w.strip() for w in workloads.split(",") if w.strip()]
    ss = [x.strip() for x in strategies.split(",") if x.strip()]
    for name, known, option in [(w, WORKLOADS, "--workloads") for w in ws] + [(x, STRATEGIES, "--strategies") for x in ss]:
        if name not in known:
            raise SelpError(f"{option}: unknown {name!r}; use {', '.join(known)}")
    run(ws, ss, deletions, seed, stub_extra, out_dir, say_printer(quiet), grid_k, orders, mixed, latencies)
    click.echo(f"wrote {out_dir}/results.csv", err=True)


@click.command(name="adapt")
@click.option("--rows", type=click.IntRange(min=1), default=20000, show_default=True, help="Tuples per source relation (16 sources, 24 views): the scale.")
@click.option("--mix", type=click.IntRange(min=0), default=24, show_default=True, help="Random changes of the mix experiment (the paper: 24).")
@click.option("--sweep", default="0,1,2,4,8,16,24,32,64,128", show_default=True, help="Comma-separated numbers of changes for the sweep ('' for none).")
@click.option("--updates", type=click.IntRange(min=0), default=1000, show_default=True, help="Data changes per source in the mix+updates experiment (0: not run).")
@click.option("--kinds/--no-kinds", default=True, show_default=True, help="Also one change of each kind.")
@click.option("--engine", default="embedded", show_default=True, help="Z-relation engine: embedded, reference or spark.")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True, help="Runs of each computation; the fastest is kept.")
@_SEED
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="bench-out/adapt", show_default=True, help="Where results.csv/json, summary.md and the plots go.")
@_QUIET
def adapt_cmd(rows: int, mix: int, sweep: str, updates: int, kinds: bool, engine: str, repeat: int, seed: int, out_dir: str, quiet: bool) -> None:
    """[GI12] §V (selp.bench.adapt): adapting a SWISS-PROT-like mapping program's instances
    after random mapping (and data) changes, against recomputation, with and without
    provenance tables; every adapted instance is checked against recomputation.

    \b
    Example:
      selp bench adapt --rows 20000 --sweep 0,8,24,64 --out datasets/results/adapt
    """
    from selp.adapt.registry import z_engine_names
    from selp.bench.adapt import markdown, run, save, summary

    if engine not in z_engine_names():
        raise SelpError(f"--engine: unknown {echo(engine)} (choose {', '.join(z_engine_names())})")
    counts = _int_list(sweep, "--sweep", 0) if sweep.strip() else []
    say = say_printer(quiet)
    params = {"rows": rows, "mix": mix, "sweep": counts, "updates": updates, "kinds": kinds, "engine": engine, "repeat": repeat,
              "seed": seed, "command": _command_line()}
    rows_out = run(rows, mix, counts, updates, kinds, seed, engine, repeat, say, lambda so_far: save(so_far, out_dir, params))
    click.echo(markdown(summary(rows_out)), nl=False)
    for p in save(rows_out, out_dir, params):
        say(f"wrote {p}")


@click.command(name="spark")
@click.option("--input", "source", default="1000", show_default=True, help="NODES of the anchors graph (its closure path), or tc:TUPLES of the TC benchmark graph.")
@click.option("-k", "ks", default="1,3,7", show_default=True, help="Comma-separated k of the top-k lines (beside eval).")
@click.option("--passes", type=click.IntRange(min=1), default=5, show_default=True, help="Timed passes of every line; the median is reported.")
@click.option("--warmup", type=click.IntRange(min=0), default=2, show_default=True, help="Untimed passes first (the JVM compiles for ~20 s).")
@click.option("--master", default="local[2]", show_default=True, help="Spark master URL.")
@click.option("--conf", "conf", multiple=True, help="Spark setting key=value (repeatable) [default: spark.driver.memory=2g for a new local session].")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="bench-out/spark", show_default=True, help="Where results.csv/json, summary.md and the generated input (work/) go.")
@_QUIET
def spark_cmd(source: str, ks: str, passes: int, warmup: int, master: str, conf: tuple[str, ...], out_dir: str, quiet: bool) -> None:
    """Spark eval and top-k of every fact of a transitive closure in one warm session
    (selp.bench.spark_ratios): each line PASSES times in turn after WARMUP untimed passes, the
    median and fastest of each, and issue 19's ratios (top-3 / eval <= 2, top-7 / top-1 <= 1.25).

    \b
    Examples:
      selp bench spark --input 1000 --passes 5 --out datasets/results/spark-scale/run
      selp bench spark --input tc:1000000 --passes 3
    """
    from pyspark.sql import SparkSession

    from selp.bench.results import machine_info, write_results
    from selp.bench.spark_ratios import parse_input, run, summary, table
    from selp.cli.root import parse_conf

    parse_input(source)  # a bad value is a one-line error before Spark starts
    k_values = tuple(_int_list(ks, "-k", 1))
    settings = parse_conf(conf)
    if master.startswith("local") and "spark.driver.memory" not in settings and SparkSession.getActiveSession() is None:
        # the recorded figures' driver (a setting of the JVM's launch: a session already running
        # in this process, an embedding program's, is used as it is rather than restarted)
        settings["spark.driver.memory"] = "2g"
    say = say_printer(quiet)
    out = Path(out_dir)
    spark = start_spark(master, settings, quiet)
    rows = run(source, k_values, passes, warmup, spark, out / "work", say)
    summ = summary(rows)
    text = table(summ, source, master)
    click.echo(text, nl=False)
    machine = machine_info() | {"command": _command_line(), "conf": settings}
    paths = write_results(rows, out, machine)
    write_text(out / "summary.md", text)
    for p in paths + [out / "summary.md"]:
        say(f"wrote {p}")


# the registry of benchmarks, in the order an unknown name's error lists them
for _command in (*(_dataset_command(d) for d in ("iris", "amie", "explain", "tc")), instrument_cmd, topk_cmd, cdss_cmd, bidir_cmd, proql_cmd, anchors_cmd, maintain_cmd, adapt_cmd, spark_cmd):
    bench.add_command(_command)
