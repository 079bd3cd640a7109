"""``selp adapt``: recompute a program's instance after the program and its data change, reusing
the old instance (Green & Ives; docs/adapt.md)."""

from __future__ import annotations

from pathlib import Path

import click

from selp.engines.registry import names as engine_names
from selp.errors import SelpError


@click.command("adapt")
@click.argument("old_program", type=click.Path(dir_okay=False))
@click.argument("new_program", type=click.Path(dir_okay=False))
@click.option("--db", "db_dir", required=True, type=click.Path(file_okay=False), help="Old data: REL.csv per EDB relation (optional _cnt column).")
@click.option("--delta", "delta_dir", type=click.Path(file_okay=False), help="Pending data changes: REL.csv with signed _cnt.")
@click.option("--strategy", type=click.Choice(["adapt", "recompute"]), default="adapt", show_default=True)
@click.option("--engine", type=click.Choice(engine_names()), default="embedded", show_default=True)
@click.option("--no-provenance", is_flag=True, help="Keep no provenance tables (P_m) for the rewriting to use.")
@click.option("--show", "show", multiple=True, help="Print this relation of the new instance with its counts (repeatable).")
def adapt_cmd(old_program: str, new_program: str, db_dir: str, delta_dir: str | None, strategy: str, engine: str, no_provenance: bool, show: tuple[str, ...]) -> None:
    """Compute NEW_PROGRAM's instance from OLD_PROGRAM's (over Z-relations, with counts).

    The old instance is computed from --db first; then every view of the new program is
    planned against it (fold with remainder over old views and provenance tables) and the plan,
    its estimated cost and the recomputation's are printed.

    \b
    Example:
      selp adapt examples/adapt/fig3/old.dl examples/adapt/fig3/new.dl \\
          --db examples/adapt/fig3/db --delta examples/adapt/fig3/delta --show gene
    """
    from selp.adapt.adapt import DELTA, adapt, commit, materialise
    from selp.adapt.files import read_zrel
    from selp.adapt.registry import z_engine
    from selp.adapt.zprogram import check, from_text, to_text
    from selp.language.parser import parse_program_file
    from selp.language.printer import format_rule
    from selp.values import display_value

    old = parse_program_file(old_program)
    new = parse_program_file(new_program)
    old_arities, old_views = check(old)
    new_arities, new_views = check(new)
    idb = {v.relation for v in old_views} | {v.relation for v in new_views}
    edb = {r: a for r, a in {**old_arities, **new_arities}.items() if r not in idb}
    eng = z_engine(engine)
    for rel, arity in sorted(edb.items()):
        f = Path(db_dir) / f"{rel}.csv"
        eng.put(rel, arity, to_text(read_zrel(f, arity)) if f.exists() else {})
    if delta_dir:
        for f in sorted(Path(delta_dir).glob("*.csv")):
            if f.stem not in edb:
                raise SelpError(f"{f}: {f.stem} is not an input relation of either program")
            eng.put(f.stem + DELTA, edb[f.stem], to_text(read_zrel(f, edb[f.stem])))
    provenance = not no_provenance
    materialise(eng, old, provenance)
    total, total_re = 0.0, 0.0
    for vp in adapt(eng, old, new, provenance, strategy=strategy):
        p = vp.plan
        total += p.cost
        total_re += p.recompute_cost
        click.echo(f"{vp.relation}: estimated cost {p.cost:.0f} vs recomputation {p.recompute_cost:.0f} ({p.explored} plan(s) explored)")
        for cq, k in sorted(p.query.items(), key=lambda x: x[0].key):
            times = f"  x{abs(k)}" if abs(k) > 1 else ""
            click.echo(f"  {format_rule(cq.rule(vp.relation, k))}{times}")
    click.echo(f"total: estimated {total:.0f} vs recomputation {total_re:.0f} ({strategy})")
    commit(eng, old, new, provenance)
    for rel in show:
        if rel not in new_arities:
            raise SelpError(f"--show {rel}: no such relation in {new_program}")
        rows = from_text(eng.get(rel)) if eng.has(rel) else {}
        click.echo(f"{rel}  {sum(1 for n in rows.values() if n > 0)} visible tuple(s)")
        for row, n in sorted(rows.items(), key=lambda x: [display_value(v) for v in x[0]]):
            click.echo("  " + "  ".join(display_value(v) for v in row) + f"  : {n}")
