"""The ``selp`` command line.

Exit codes: 0 success, 1 a user error (bad program, data or option value; one located line on
stderr), 2 a usage error (unknown option, missing argument).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Callable, NoReturn

import click

from selp.errors import SelpError

EXAMPLE_PROGRAM = "examples/trade/trade.dl"


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


class _Group(click.Group):
    """Turns user errors raised anywhere below into one line and exit code 1."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except SelpError as err:
            _fail(str(err))


def _load(program: str):
    from selp.language import parse_program_file
    from selp.language.validate import analyze

    return analyze(parse_program_file(program))


def _parse_conf(values: tuple[str, ...]) -> dict[str, str]:
    conf = {}
    for kv in values:
        if "=" not in kv:
            raise SelpError(f"--conf expects key=value, got {kv!r}")
        k, v = kv.split("=", 1)
        conf[k.strip()] = v.strip()
    return conf


def _start_spark(master: str | None, conf: dict[str, str], quiet: bool):
    """A Spark session, or a one-line explanation of why none could start."""
    import shutil

    if not master and shutil.which("java") is None and not _java_home():
        raise SelpError(
            "the spark engine needs Java 17 (apt-get install openjdk-17-jre-headless);"
            " or run with --engine local"
        )
    from selp.engines.spark_session import get_spark

    if not quiet:
        click.echo(f"starting Spark ({master or 'local'}) ...", err=True)
    try:
        return get_spark(master, conf)
    except SelpError:
        raise
    except Exception as err:  # Py4J/PySpark errors: report the first line, not a JVM stack
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise SelpError(f"could not start Spark: {first}") from None


def _java_home() -> str | None:
    import os

    return os.environ.get("JAVA_HOME")


def _progress_printer(quiet: bool, engine: str) -> Callable:
    """Per-iteration progress on stderr; for the local engine only once a run takes a while."""
    start = time.perf_counter()

    def report(comp, iteration: int, delta: int, total: int) -> None:
        if quiet:
            return
        if engine == "local" and time.perf_counter() - start < 1.0:
            return
        rels = ",".join(comp.relations)
        click.echo(
            f"  stratum {comp.stratum} [{rels}] iteration {iteration}: +{delta} new, {total} total"
            f" ({time.perf_counter() - start:.1f}s)",
            err=True,
        )

    return report


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="selp")
def main() -> None:
    """selp: top-k selective provenance for datalog programs, locally or on Apache Spark.

    \b
    Examples:
      selp check examples/trade/trade.dl
      selp eval examples/trade/trade.dl --db examples/trade/db --show dealsWith
      selp eval prog.dl --db data/ --engine spark --master spark://host:7077 --out results/
    """


@main.command()
@click.argument("program", type=click.Path(dir_okay=False))
@click.option("--db", "db_dir", type=click.Path(file_okay=False), help="Directory of REL.csv / REL.parquet files; used to infer column types.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def check(program: str, db_dir: str | None, as_json: bool) -> None:
    """Parse and validate PROGRAM; print its relations and strata.

    \b
    Example:
      selp check examples/trade/trade.dl
    """
    from selp.language.types import resolve_types

    analysis = _load(program)
    if db_dir:
        from selp.database import load_database

        types = load_database(analysis, db_dir).types
    else:
        types = resolve_types(analysis)
    rels = []
    for rel in sorted(analysis.arities):
        rels.append(
            {
                "relation": rel,
                "kind": "idb" if rel in analysis.idb else "edb",
                "arity": analysis.arities[rel],
                "types": list(types[rel]),
                "rules": [r.name for r in analysis.program.rules if r.head.relation == rel],
            }
        )
    strata = analysis.strata
    if as_json:
        click.echo(json.dumps({"program": program, "relations": rels, "strata": strata, "rules": len(analysis.program.rules)}, indent=2))
        return
    click.echo(f"{program}: ok — {len(analysis.program.rules)} rule(s), {len(analysis.program.facts)} inline fact(s)")
    click.echo("relations:")
    for r in rels:
        sig = ", ".join(r["types"])
        extra = f"  rules: {', '.join(r['rules'])}" if r["rules"] else ""
        click.echo(f"  {r['kind']}  {r['relation']}/{r['arity']} ({sig}){extra}")
    click.echo("strata:")
    for i, s in enumerate(strata):
        rec = [c for c in analysis.components if c.stratum == i and c.recursive]
        note = f"  (recursive: {', '.join('+'.join(c.relations) for c in rec)})" if rec else ""
        click.echo(f"  {i}: {', '.join(s)}{note}")
    if not db_dir:
        click.echo("(column types shown without data; give --db to infer them from files)")


@main.command(name="eval")
@click.argument("program", type=click.Path(dir_okay=False))
@click.option("--db", "db_dir", type=click.Path(file_okay=False), help="Directory of REL.csv / REL.parquet files (one per EDB relation).")
@click.option("--engine", type=click.Choice(["local", "spark"]), default=None, help="Evaluation engine [default: SELP_ENGINE, else selp.toml beside the program, else spark].")
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
      selp eval examples/trade/trade.dl --db examples/trade/db --engine local --show dealsWith
      selp eval examples/trade/trade.dl --db examples/trade/db --out results/ --format parquet
      SELP_ENGINE=local selp eval prog.dl --db data/ --json
    """
    from selp.config import choose_engine
    from selp.values import format_value

    analysis = _load(program)
    engine = choose_engine(engine, program)
    if engine == "local" and (master or conf):
        raise SelpError("--master/--conf apply to the spark engine; add --engine spark")
    progress = _progress_printer(quiet, engine)
    if engine == "spark":
        spark = _start_spark(master, _parse_conf(conf), quiet)
        from selp.engines.spark import run_spark

        result = run_spark(analysis, db_dir, spark, progress)
    else:
        from selp.engines.result import run_local

        result = run_local(analysis, db_dir, progress)
    for w in result.warnings:
        click.echo(f"warning: {w}", err=True)
    relations = result.relations()
    wanted = relations if "*" in show else list(dict.fromkeys(show))
    for rel in wanted:
        if rel not in relations:
            kind = "an EDB relation" if rel in analysis.edb else "not a relation of the program"
            raise SelpError(f"--show {rel}: {kind}; IDB relations are {', '.join(relations)}")
    written = result.write(out_dir, fmt) if out_dir else []
    from selp.database import sorted_rows

    if as_json:
        doc = {
            "program": program,
            "engine": result.engine,
            "iterations": result.iterations,
            "seconds": round(result.seconds, 6),
            "relations": {},
            "written": written,
        }
        for rel in relations:
            entry: dict = {"count": result.count(rel), "columns": list(result.columns[rel])}
            if rel in wanted:
                entry["rows"] = [[_json_value(v) for v in row] for row in sorted_rows(result.rows(rel))]
            doc["relations"][rel] = entry
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
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


def _json_value(v):
    from selp.values import Skolem, format_value

    return format_value(v) if isinstance(v, Skolem) else v


if __name__ == "__main__":
    main()
