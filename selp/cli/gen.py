"""``selp gen``: generate the benchmark datasets (TC, AMIE, IRIS, EXPLAIN, a CDSS)."""

from __future__ import annotations

import json
from typing import NamedTuple

import click

from selp.errors import SelpError


@click.group(name="gen")
def gen() -> None:
    """Generate benchmark datasets.

    \b
    Example:
      selp gen tc --target-output 100000 --out /tmp/tc100k
    """


def _scaled_or_units(dataset: str, out_dir: str, scale: int | None, units: int | None, unit_option: str, seed: int) -> None:
    """Generate by --scale (calibrated output size) or by the generator's own unit; print stats."""
    from selp.bench.datasets import generate_scaled, generate_units

    if (scale is None) == (units is None):
        raise click.UsageError(f"give either --scale or {unit_option}")
    if scale is not None:
        stats = generate_scaled(dataset, out_dir, scale, seed)
    else:
        stats = generate_units(dataset, out_dir, units, seed)  # type: ignore[arg-type]
    click.echo(json.dumps(stats, indent=2))


_SCALE_HELP = "About this many output tuples (every IDB relation), calibrated from measured runs."


@gen.command(name="tc")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Database directory to write edge.csv into.")
@click.option("--scale", "--target-output", "target_output", type=click.IntRange(min=4), help="Choose the graph size for about this many tc tuples (exact to within 1% above a few thousand).")
@click.option("--nodes", type=click.IntRange(min=2), help="Number of nodes (with --edges).")
@click.option("--edges", type=click.IntRange(min=1), help="Number of undirected edges (edge.csv gets both directions).")
@click.option("--components", type=click.IntRange(min=1), default=None, help="Split the nodes into this many connected components.")
@click.option("--seed", type=int, default=0, show_default=True)
def gen_tc(out_dir: str, target_output: int | None, nodes: int | None, edges: int | None, components: int | None, seed: int) -> None:
    """A random undirected weighted graph for datasets/tc.dl; prints its statistics as JSON.

    \b
    Examples:
      selp gen tc --scale 1000000 --out /tmp/tc1m
      selp gen tc --nodes 1000 --edges 2500 --components 4 --seed 7 --out /tmp/tc
      selp eval datasets/tc.dl --db /tmp/tc1m
    """
    from selp.gen.tc import generate_tc, tc_size_for

    if target_output is not None:
        if nodes is not None or edges is not None or components is not None:
            raise click.UsageError("--scale chooses --nodes/--edges/--components; give either it or them")
        nodes, edges, components = tc_size_for(target_output)
    elif nodes is None or edges is None:
        raise click.UsageError("give --scale, or --nodes and --edges")
    try:
        stats = generate_tc(out_dir, nodes, edges, seed, components)
    except ValueError as err:
        raise SelpError(str(err)) from None
    click.echo(json.dumps(stats, indent=2))


class _ByUnits(NamedTuple):
    """What differs between the generators sized by their own unit: texts and the examples."""

    out_help: str
    unit_option: str
    unit_help: str
    summary: str
    example_units: int
    example_dir: str  # suffix of /tmp/DATASET in the examples
    example_query: str  # the topk options of the last example


_BY_UNITS = {
    "amie": _ByUnits("Database directory to write the CSV files into.", "--persons",
                     "Number of persons instead of --scale; the output of datasets/amie.dl is about 9-13 facts per person.",
                     "A synthetic YAGO-like knowledge base for datasets/amie.dl; prints its statistics as JSON.",
                     10000, "10k", "--pattern 'livesIn(person1, *) // wasBornIn(*, city1)'"),
    "iris": _ByUnits("Database directory to write a.csv .. d.csv into.", "--records",
                     "Number of record ids instead of --scale; datasets/iris.dl derives about 44 facts per record.",
                     "Random link relations for datasets/iris.dl; prints their statistics as JSON.",
                     10000, "10k", "--pattern 'path // ab // b' -k 3"),
    "explain": _ByUnits("Database directory to write the CSV files into.", "--agents",
                        "Number of agents instead of --scale; datasets/explain.dl derives about 75-80 facts per agent.",
                        "A random agent network for datasets/explain.dl; prints its statistics as JSON.",
                        1000, "1k", "--pattern 'level(*, *) // base(*, *)' -k 3"),
}


def _units_command(dataset: str, u: _ByUnits) -> click.Command:
    """``selp gen DATASET``: by ``--scale`` or by the generator's own unit (``u.unit_option``)."""
    doc = f"""{u.summary}

    \b
    Examples:
      selp gen {dataset} --scale 100000 --out /tmp/{dataset}100k
      selp gen {dataset} {u.unit_option} {u.example_units} --out /tmp/{dataset}{u.example_dir}
      selp topk datasets/{dataset}.dl --db /tmp/{dataset}{u.example_dir} {u.example_query}
    """

    @click.command(name=dataset, help=doc)
    @click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help=u.out_help)
    @click.option("--scale", type=click.IntRange(min=10), help=_SCALE_HELP)
    @click.option(u.unit_option, "units", type=click.IntRange(min=2), help=u.unit_help)
    @click.option("--seed", type=int, default=0, show_default=True)
    def command(out_dir: str, scale: int | None, units: int | None, seed: int) -> None:
        _scaled_or_units(dataset, out_dir, scale, units, u.unit_option, seed)

    return command


for _dataset, _units in _BY_UNITS.items():
    gen.add_command(_units_command(_dataset, _units))


@gen.command(name="cdss")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="CDSS directory to write (cdss.toml and data/<peer>/<relation>.csv).")
@click.option("--peers", type=click.IntRange(min=1), required=True, help="Number of peers P0..P{N-1}.")
@click.option("--base-size", "base_size", type=click.IntRange(min=0), required=True, help="Base entries per peer (one tuple per entry in each of its relations).")
@click.option("--fanout", default="1", show_default=True, help="Incoming mappings per non-root peer: N or LO-HI (e.g. 1-3).")
@click.option("--topology", type=click.Choice(["chain", "tree", "random"]), default="chain", show_default=True, help="Spanning tree of the mappings.")
@click.option("--overlap", type=click.FloatRange(0, 1), default=0.2, show_default=True, help="Share of each peer's entries drawn from a pool all peers share.")
@click.option("--seed", type=int, default=0, show_default=True)
def gen_cdss(out_dir: str, peers: int, base_size: int, fanout: str, topology: str, overlap: float, seed: int) -> None:
    """A SWISS-PROT-like CDSS (selp.gen.swissprot); prints its statistics as JSON.

    \b
    Examples:
      selp gen cdss --peers 10 --base-size 2000 --fanout 1-3 --topology random --out /tmp/sp10
      selp cdss check /tmp/sp10 && selp cdss eval /tmp/sp10
    """
    from selp.gen.swissprot import generate_cdss

    try:
        stats = generate_cdss(out_dir, peers, base_size, fanout, topology, seed, overlap)
    except ValueError as err:
        raise SelpError(str(err)) from None
    click.echo(json.dumps(stats, indent=2))


@gen.command(name="transit-stub")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Database directory to write link.csv into.")
@click.option("--stub-extra", type=click.IntRange(min=0), default=8, show_default=True, help="Links per stub domain beyond a spanning tree (8 gives about 400 directed links).")
@click.option("--latencies", type=click.Choice(["paper", "random"]), default="paper", show_default=True, help="The paper's 50/10/2 ms by kind of link, or random 1-100 ms per link (cheapest paths then differ from fewest-hop ones).")
@click.option("--seed", type=int, default=0, show_default=True)
def gen_transit_stub(out_dir: str, stub_extra: int, latencies: str, seed: int) -> None:
    """The 100-node transit-stub network of [LTZIL10] (link(src, dst, latency), both directions);
    prints its statistics as JSON.

    \b
    Example:
      selp gen transit-stub --out /tmp/net && selp maintain datasets/reachable.dl --db /tmp/net
    """
    from selp.gen.network import transit_stub

    click.echo(json.dumps(transit_stub(out_dir, seed, stub_extra=stub_extra, latencies=latencies), indent=2))


@gen.command(name="sensor-grid")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Database directory to write near.csv, seed.csv, triggered.csv into.")
@click.option("--side", type=click.IntRange(min=2), default=10, show_default=True, help="Sensors per side of the square grid (10 m apart).")
@click.option("--seed", type=int, default=0, show_default=True)
def gen_sensor_grid(out_dir: str, side: int, seed: int) -> None:
    """The sensor grid of [LTZIL10] for datasets/regions.dl; prints its statistics as JSON.

    \b
    Example:
      selp gen sensor-grid --out /tmp/grid && selp maintain datasets/regions.dl --db /tmp/grid
    """
    from selp.gen.network import sensor_grid

    click.echo(json.dumps(sensor_grid(out_dir, seed, side=side), indent=2))
