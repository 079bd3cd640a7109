"""``selp proql DIR 'QUERY'``: run a ProQL query over a CDSS store's provenance.

The engine is chosen as for every selp command (:func:`selp.config.choose_engine`: ``--engine``,
then ``--master``, ``SELP_ENGINE``, the ``selp.toml`` beside ``cdss.toml``, else ``embedded``).
``spark`` evaluates by joins and fixpoints over the stored provenance tables
(:mod:`selp.cdss.proql.spark_engine`); every other engine (``embedded``, the default, and
``reference``) reads the epoch into an in-memory graph (:mod:`selp.cdss.proql.evaluate`), which
starts in milliseconds. The options that only Spark has (``--explain``, the Spark plan:
fixpoints, rounds and the access support relations used, :mod:`selp.cdss.proql.asr`;
``--no-asr``; ``--build-asrs``) ask for Spark the way ``--master`` does: they select it when
``--engine`` is not given and are refused with another engine.

The outputs are rendered by :mod:`selp.cdss.proql.render`. User errors are
:class:`~selp.errors.SelpError`, printed by the root group as one located line (exit 1).
"""

from __future__ import annotations

from pathlib import Path

import click

from selp.cli.root import start_spark
from selp.engines.registry import names as engine_names
from selp.errors import SelpError, echo, read_user_text


def _probabilities(items: tuple[str, ...]) -> dict[str, float] | None:
    if not items:
        return None
    out = {}
    for it in items:
        name, sep, p = it.partition("=")
        try:
            value = float(p)
        except ValueError:
            value = -1.0
        if not sep or not name or not 0.0 <= value <= 1.0:
            raise SelpError(f"--prob expects EVENT=P with 0 <= P <= 1, got {echo(it)}")
        out[name] = value
    return out


@click.command(name="proql")
@click.argument("directory", type=click.Path())
@click.argument("query", required=False)
@click.option("-f", "--file", "query_file", type=click.Path(dir_okay=False), help="Read the query from this file.")
@click.option("--peer", default=None, help="Query the epoch this peer's instance reflects [default: the latest exchange].")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "dot"]), default="table", show_default=True)
@click.option("--prob", "probs", multiple=True, help="EVENT=P: an event's probability (PROBABILITY queries); repeatable.")
@click.option("--engine", type=click.Choice(engine_names()), default=None,
              help="spark: joins and fixpoints over the stored provenance tables; any other engine: an in-memory"
                   " graph [default: spark with --master, --explain, --no-asr or --build-asrs, else SELP_ENGINE,"
                   " else `engine` in selp.toml beside cdss.toml, else embedded].")
@click.option("--master", default=None, help="Spark master URL (spark engine).")
@click.option("--full", is_flag=True, help="Print infinite POLYNOMIAL series with every term found (default: the first terms and a marker).")
@click.option("--explain", is_flag=True, help="Print the evaluation plan (spark engine): fixpoints, rounds, ASRs used.")
@click.option("--no-asr", is_flag=True, help="Do not use the epoch's access support relations (spark engine).")
@click.option("--build-asrs", is_flag=True, help="Create access support relations for the latest epoch (chosen by the heuristic of selp.cdss.proql.asr); later exchanges maintain them.")
@click.option("--asr-width", type=click.IntRange(min=2), default=8, show_default=True, help="With --build-asrs: mappings per ASR at most.")
@click.option("--asr-kind", type=click.Choice(["inner", "outer"]), default="inner", show_default=True, help="With --build-asrs: inner join, or full outer (every subpath; replaces its mappings' own edges).")
def proql(directory: str, query: str | None, query_file: str | None, peer: str | None, fmt: str, probs: tuple[str, ...],
          engine: str | None, master: str | None, full: bool, explain: bool, no_asr: bool, build_asrs: bool, asr_width: int,
          asr_kind: str) -> None:
    """Run a ProQL QUERY over the provenance stored in the CDSS DIRECTORY.

    \b
    Examples:
      selp proql examples/cdss/bio 'FOR [U $x] INCLUDE PATH [$x] <-+ [] RETURN $x'
      selp proql examples/cdss/bio -f q7.proql --peer PBioSQL --format json
      selp proql examples/cdss/bio --engine spark --explain 'FOR [B $x] RETURN $x'
    """
    from selp.cdss.config import CONFIG_FILE
    from selp.cdss.proql.render import RENDERERS, render_plan
    from selp.config import choose_engine
    from selp.engines.registry import get_engine, spark_engine_name

    # the Spark-only options ask for Spark as --master does: below --engine, above the rest
    if engine is None and (explain or no_asr or build_asrs):
        engine = spark_engine_name()
    eng = get_engine(choose_engine(engine, Path(directory) / CONFIG_FILE, master))
    if build_asrs:
        if not eng.needs_spark_session:
            raise SelpError("--build-asrs applies to the spark engine; add --engine spark")
        from selp.cdss.proql.asr import build_asrs as build
        from selp.cdss.store import Store

        spark = start_spark(master, {}, True)
        with Store.open(directory) as store:
            entries = build(store, spark, width=asr_width, kind=asr_kind)
        for e in entries:
            click.echo(f"{e['name']}: {e['kind']} join of {' <- '.join(e['path'])}, {e['rows']} row(s)")
        click.echo(f"({len(entries)} access support relation(s) for the latest epoch)")
        if query is None and query_file is None:
            return
    if (query is None) == (query_file is None):
        raise SelpError("give the query as an argument or with -f FILE (not both)")
    if query_file is not None:
        text = read_user_text(query_file, "query file")
    else:
        text = query
    spark = None
    if not eng.needs_spark_session:
        if master or explain or no_asr:
            raise SelpError("--master, --explain and --no-asr apply to the spark engine; add --engine spark")
    else:
        spark = start_spark(master, {}, True)
    r, sr = eng.proql(
        directory, text, file=query_file, peer=peer, probabilities=_probabilities(probs), spark=spark, use_asrs=not no_asr, graph=fmt != "table"
    )
    if explain:
        click.echo(render_plan(sr))
    click.echo(RENDERERS[fmt](r, full))
