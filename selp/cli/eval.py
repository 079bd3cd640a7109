"""``selp eval``: evaluate a program and print (or write) its IDB relations."""

from __future__ import annotations

import json

import click

from selp.cli.root import ENGINE_CHOICES, ENGINE_HELP, choose_program_engine, load_program, parse_conf, progress_printer, start_spark
from selp.errors import SelpError


@click.command(name="eval")
@click.argument("program", type=click.Path(dir_okay=False))
@click.option("--db", "db_dir", type=click.Path(file_okay=False), help="Directory of REL.csv / REL.parquet files (one per EDB relation).")
@click.option("--engine", type=click.Choice(ENGINE_CHOICES), default=None, help=ENGINE_HELP)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Write every IDB relation to OUT/REL.<format> (atomically).")
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet"]), default="csv", show_default=True, help="Format for --out.")
@click.option("--show", multiple=True, metavar="REL", help="Print the tuples of REL ('*' for all IDB relations); repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON (counts, and rows of --show relations).")
@click.option("--master", default=None, help="Spark master URL, e.g. local[4], spark://host:7077, yarn.")
@click.option("--conf", multiple=True, metavar="KEY=VALUE", help="Extra Spark configuration; repeatable.")
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr.")
def eval_cmd(program: str, db_dir: str | None, engine: str | None, out_dir: str | None, fmt: str, show: tuple[str, ...], as_json: bool, master: str | None, conf: tuple[str, ...], quiet: bool) -> None:
    """Evaluate PROGRAM over the database in --db and print each IDB relation's size.

    \b
    Examples:
      selp eval examples/trade/trade.dl --db examples/trade/db --show dealsWith
      selp eval examples/trade/trade.dl --db examples/trade/db --out results/ --format parquet
      SELP_ENGINE=spark selp eval prog.dl --db data/ --json
    """
    from selp.database import sorted_rows
    from selp.engines.result import plan_line, plan_of, result_json
    from selp.values import format_value

    analysis = load_program(program)
    _, eng = choose_program_engine(engine, program, master, conf)
    progress = progress_printer(quiet, eng.needs_spark_session)
    spark = start_spark(master, parse_conf(conf), quiet) if eng.needs_spark_session else None
    result = eng.run(analysis, db_dir, progress, spark)
    if not quiet:
        for step in plan_of(result):
            if step["mode"] != "one pass":  # the recursive components: how their fixpoints ran
                click.echo(plan_line(step), err=True)
    for w in result.warnings:
        click.echo(f"warning: {w}", err=True)
    relations = result.relations()
    wanted = relations if "*" in show else list(dict.fromkeys(show))
    for rel in wanted:
        if rel not in relations:
            kind = "an EDB relation" if rel in analysis.edb else "not a relation of the program"
            raise SelpError(f"--show {rel}: {kind}; IDB relations are {', '.join(relations)}")
    written = result.write(out_dir, fmt) if out_dir else []
    if as_json:
        click.echo(json.dumps(result_json(result, program, wanted, written), indent=2, ensure_ascii=False))
        return
    width = max((len(r) for r in relations), default=0)
    for rel in relations:
        click.echo(f"{rel:<{width}}  {result.count(rel)}")
    for rel in wanted:
        click.echo(f"\n{rel}:")
        for row in sorted_rows(result.rows(rel)):
            click.echo(f"  {rel}({', '.join(format_value(v) for v in row)})")
    if not quiet:
        click.echo(f"({result.engine} engine, {result.iterations} iteration(s), {result.seconds:.3f}s)", err=True)
        for p in written:
            click.echo(f"wrote {p}", err=True)
