"""``selp check``: parse and validate a program; print its relations and strata."""

from __future__ import annotations

import json

import click

from selp.cli.root import load_program


@click.command()
@click.argument("program", type=click.Path(dir_okay=False))
@click.option("--db", "db_dir", type=click.Path(file_okay=False), help="Directory of REL.csv / REL.parquet files; used to infer column types.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def check(program: str, db_dir: str | None, as_json: bool) -> None:
    """Parse and validate PROGRAM; print its relations and strata.

    \b
    Example:
      selp check examples/trade/trade.dl
    """
    from selp.database import column_types
    from selp.language.describe import recursive_components, relations_report

    analysis = load_program(program)
    rels = relations_report(analysis, column_types(analysis, db_dir))
    strata = analysis.strata
    if as_json:
        click.echo(json.dumps({"program": program, "relations": rels, "strata": strata, "rules": len(analysis.program.rules)}, indent=2))
        return
    click.echo(f"{program}: ok — {len(analysis.program.rules)} rule(s), {len(analysis.program.facts)} inline fact(s)")
    click.echo("relations:")
    for r in rels:
        sig = ", ".join(r["types"])
        extra = f"  rules: {', '.join(r['rules'])}" if r["rules"] else ""
        if r["aggregate"]:
            extra += f"  aggregate: {r['aggregate']}"
        click.echo(f"  {r['kind']}  {r['relation']}/{r['arity']} ({sig}){extra}")
    click.echo("strata:")
    for i, s in enumerate(strata):
        rec = recursive_components(analysis, i)
        note = f"  (recursive: {', '.join(rec)})" if rec else ""
        click.echo(f"  {i}: {', '.join(s)}{note}")
    if not db_dir:
        click.echo("(column types shown without data; give --db to infer them from files)")
