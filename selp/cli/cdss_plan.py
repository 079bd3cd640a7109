"""``selp cdss plan``: how ``selp cdss exchange --strategy adapt`` would compute each relation
after a ``cdss.toml`` edit — rewritten rules over the old instances, or recomputation — with
estimated costs; nothing is written."""

from __future__ import annotations

import json

import click

from selp.cli.cdss import DIR_ARG, cdss, engine_option, open_store, store_engine
from selp.cli.root import say_printer


@cdss.command(name="plan")
@DIR_ARG
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@engine_option()
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr.")
def plan_cmd(directory: str, fmt: str, engine: str | None, quiet: bool) -> None:
    """Print the plan `selp cdss exchange --strategy adapt` would follow now: per relation of
    the compiled program, the rules rewritten against the latest epoch's instances and
    provenance tables, or "recompute" (recursive components, negation, ordering comparisons),
    with its estimated cost against recomputation's. The plan is found by computing the
    adaptation in memory; the store is not changed.

    \b
    Example:
      selp cdss plan examples/cdss/bio --format json
    """
    from selp.cdss.adapt import plan_exchange
    from selp.engines.registry import get_engine

    with open_store(directory) as s:
        eng = get_engine(store_engine(engine, s))
        result, why = plan_exchange(s, eng, say=say_printer(quiet))
    if result is None:
        message = f"{why}: the next exchange recomputes"
        click.echo(json.dumps({"views": [], "note": message}) if fmt == "json" else message)
        return
    cost = sum(st.cost for st in result.steps)
    recompute = sum(st.recompute_cost for st in result.steps)
    if fmt == "json":
        views = [st.as_json() for st in result.steps]
        click.echo(json.dumps({"views": views, "cost": round(cost, 1), "recompute_cost": round(recompute, 1)}, indent=2))
        return
    for st in result.steps:
        if st.how == "recompute":
            click.echo(f"{st.relation}: recompute ({st.reason}), estimated cost {st.cost:.0f}")
            continue
        reused = "" if st.cost < st.recompute_cost else " (recomputation is cheapest)"
        click.echo(f"{st.relation}: adapt, estimated cost {st.cost:.0f} vs recomputation {st.recompute_cost:.0f}{reused}")
        for rule in st.rules():
            click.echo(f"  {rule}")
    click.echo(f"total: estimated {cost:.0f} vs recomputation {recompute:.0f}")
