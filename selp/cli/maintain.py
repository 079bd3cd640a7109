"""``selp maintain``: apply a stream of base changes to a durable maintained view and print the
view's changes."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from selp.cli.root import load_program
from selp.engines.registry import get_engine


@click.command(name="maintain")
@click.argument("program", type=click.Path(dir_okay=False))
@click.option("--db", "db_dir", required=True, type=click.Path(file_okay=False, exists=True), help="Directory of REL.csv / REL.parquet files: the base the view is first built from.")
@click.option("--changes", "changes_file", default=None, metavar="FILE|-", help="Lines +rel(v, ...) / -rel(v, ...) to apply in order ('-': stdin). Without it, only build or show the state.")
@click.option("--strategy", type=click.Choice(["absorption", "dred", "recompute"]), default="absorption", show_default=True, help="How the view is maintained.")
@click.option("--state", "state_file", type=click.Path(dir_okay=False), default=None, help="The state file [default: DB/.selp-maintain/PROGRAM.state].")
@click.option("--reset", is_flag=True, help="Rebuild the state from --db (forgetting the changes applied so far).")
@click.option("--batch", is_flag=True, help="Apply all the changes as one batch (one set of view changes).")
@click.option("--formulas", type=click.Choice(["bdd", "monomials"]), default="bdd", show_default=True, help="Absorption formulas as BDDs (CUDD, depth-first variable order) or as minimal monomial sets.")
@click.option("--cap", type=click.IntRange(min=1), default=None, help="Monomials per formula before absorption falls back to DRed [default: 4096].")
@click.option("--node-cap", type=click.IntRange(min=1), default=None, help="Live BDD nodes (all formulas together) before absorption falls back to DRed [default: 4000000].")
@click.option("--engine", type=click.Choice(["embedded", "reference", "spark"]), default="reference", show_default=True, help="The engine --strategy recompute evaluates with; spark: absorption distributed over Spark partitions (monomial formulas).")
@click.option("--minship", type=click.Choice(["eager", "lazy", "off"]), default="lazy", show_default=True, help="--engine spark: how derivations are shipped between nodes (MinShip).")
@click.option("--nodes", type=click.IntRange(min=1), default=4, show_default=True, help="--engine spark: the number of nodes (tuples placed by their first value); fixed when the state is built.")
@click.option("--master", default=None, help="Spark master URL (--engine spark).")
@click.option("--show", multiple=True, metavar="REL", help="Print only the changes of REL; repeatable.")
@click.option("--stats", is_flag=True, help="Print the view's size, provenance bytes and timing as JSON on stderr.")
@click.option("-q", "--quiet", is_flag=True, help="No summary on stderr.")
def maintain_cmd(program: str, db_dir: str, changes_file: str | None, strategy: str, state_file: str | None, reset: bool, batch: bool,
                 formulas: str, cap: int | None, node_cap: int | None, engine: str, minship: str, nodes: int, master: str | None,
                 show: tuple[str, ...], stats: bool, quiet: bool) -> None:
    """Maintain PROGRAM's derived relations under insertions and deletions of base tuples.

    The first run builds the view from --db; every run applies --changes to it and saves it
    (views and provenance formulas) for the next. Each change prints a '# change' line and then
    the derived tuples it removed (-) and added (+).

    \b
    Examples:
      selp gen transit-stub --out /tmp/net
      printf -- '-link(t0, t1, 50)\\n' | selp maintain datasets/reachable.dl --db /tmp/net --changes -
      selp maintain datasets/reachable.dl --db /tmp/net --changes edits.txt --strategy dred
      selp maintain datasets/reachable.dl --db /tmp/net --changes edits.txt --engine spark --minship lazy
    """
    from selp.errors import SelpError
    from selp.maintain.changes import parse_changes
    from selp.maintain.formula import DEFAULT_CAP, DEFAULT_NODE_CAP
    from selp.maintain.session import apply, default_state_path, open_state, save_state, state_bytes

    analysis = load_program(program)
    for rel in show:
        if rel not in analysis.idb:
            raise SelpError(f"--show {rel}: not a derived relation; derived relations are {', '.join(sorted(analysis.idb))}")
    warn = lambda m: click.echo(f"warning: {m}" if not m.startswith("absorption") else m, err=True)  # noqa: E731
    path = Path(state_file) if state_file else default_state_path(program, db_dir)
    t0 = time.perf_counter()
    spark = None
    # an engine on a Spark session maintains in the distributed form (selp.maintain.spark)
    distributed_form = get_engine(engine).needs_spark_session
    if distributed_form:  # refused early for other strategies
        from selp.cli.maintain_spark import open_spark

        spark = open_spark(analysis, strategy, master, quiet)
    distributed = {"nodes": nodes, "minship": minship, "spark": spark}
    state, built = open_state(analysis, db_dir, path, strategy, cap or DEFAULT_CAP, engine, reset, warn, formulas, distributed,
                              node_cap or DEFAULT_NODE_CAP)
    shipped_before = dict(getattr(state.maintainer, "total", {}))
    if distributed_form or shipped_before:
        from selp.cli.maintain_spark import check_loaded

        check_loaded(state.maintainer, path, distributed_form, nodes, minship, spark)
    t_open = time.perf_counter() - t0
    applied = view_changes = 0
    t1 = time.perf_counter()
    if changes_file is not None:
        stream = _stdin() if changes_file == "-" else _open(changes_file)
        base = analysis.edb
        changes = list(parse_changes(stream, changes_file, state.types, base))  # all checked before any is applied
        groups = [changes] if batch else [[c] for c in changes]
        wanted = list(show) or None
        for group in groups:
            ins: dict = {}
            dels: dict = {}
            present = state.maintainer.stores
            for c in group:
                there = c.fact in present[c.relation].facts
                if not batch and there == (c.op == "+"):
                    warn(f"{c.loc}: {c.text()} {'is already in' if there else 'is not in'} the base; nothing to do")
                (ins if c.op == "+" else dels).setdefault(c.relation, set()).add(c.fact)
                if c.op == "+":
                    dels.get(c.relation, set()).discard(c.fact)
                else:
                    ins.get(c.relation, set()).discard(c.fact)
            state.maintainer, out = apply(state.maintainer, ins, dels, warn)
            applied += len(group)
            view_changes += out.count()
            if not batch:
                click.echo(f"# {group[0].text()}")
            for line in out.lines(wanted):
                click.echo(line)
    t_apply = time.perf_counter() - t1
    save_state(state, path)
    view = state.maintainer.view()
    if stats:
        info = {"strategy": state.strategy, "running": state.running, "state_file": str(path), "built": built,
                "tuples": {r: len(v) for r, v in sorted(view.items())}, "changes": applied, "view_changes": view_changes,
                "seconds_build_or_load": round(t_open, 4), "seconds_apply": round(t_apply, 4), "state_bytes": state_bytes(state.maintainer),
                **state.maintainer.provenance_stats()}
        if distributed_form:
            from selp.cli.maintain_spark import shipped

            info.update(shipped(state.maintainer, shipped_before))
        click.echo(json.dumps(info, indent=2), err=True)
    elif not quiet:
        how = state.strategy if state.running == state.strategy else f"{state.running}, after falling back from {state.strategy}"
        if distributed_form:
            from selp.cli.maintain_spark import shipped

            got = shipped(state.maintainer, shipped_before)
            how += f" on {nodes} nodes, MinShip {minship}: shipped {got['shipped_rows']} row(s), {got['shipped_bytes']} bytes"
        click.echo(f"({'built' if built else 'loaded'} {path}; {applied} change(s), {view_changes} view change(s); {how}; {t_apply:.3f}s)", err=True)


def _stdin() -> list[str]:
    from selp.errors import SelpError

    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as err:
        raise SelpError(f"<stdin>: not UTF-8 (byte {err.start})") from None


def _open(path: str) -> list[str]:
    from selp.errors import SelpError, not_utf8

    try:
        return open(path, encoding="utf-8").read().splitlines()
    except FileNotFoundError:
        raise SelpError(f"changes file not found: {path}") from None
    except UnicodeDecodeError:
        raise SelpError(f"{path}: changes file is {not_utf8(Path(path))}") from None
    except OSError as err:
        raise SelpError(f"cannot read changes file {path}: {err.strerror}") from None
