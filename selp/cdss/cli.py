"""The ``selp cdss`` command group (registered on the main ``selp`` command in :mod:`selp.cli`).

User errors are raised as :class:`~selp.errors.SelpError`; the main group prints them as one
located line and exits 1.
"""

from __future__ import annotations

from pathlib import Path

import click

from selp.errors import SelpError


@click.group(name="cdss")
def cdss() -> None:
    """Collaborative data sharing: peers, schema mappings and update exchange."""


def _summary(directory: str) -> str:
    from selp.cdss.compile import compile_cdss
    from selp.cdss.config import load_cdss

    c = load_cdss(directory)
    compiled = compile_cdss(c)
    rels = len(c.relations())
    conds = sum(len(p.policy.rules) for p in c.peers)
    ranked = sum(1 for p in c.peers if p.policy.ranked is not None)
    existential = sum(1 for m in c.mappings if m.existentials)
    return (
        f"{c.source}: ok: {len(c.peers)} peer(s), {rels} relation(s), {len(c.mappings)} mapping(s)"
        f" ({existential} with existential variables; weakly acyclic), {conds} trust condition(s),"
        f" {ranked} ranked-trust polic{'y' if ranked == 1 else 'ies'};"
        f" compiles to {len(compiled.program.rules)} rules"
    )


@cdss.command(name="check")
@click.argument("directory", type=click.Path())
def check_cmd(directory: str) -> None:
    """Validate DIRECTORY/cdss.toml (schemas, mappings, weak acyclicity, trust) and summarise it.

    \b
    Example:
      selp cdss check examples/cdss/bio
    """
    click.echo(_summary(directory))


@cdss.command(name="compile")
@click.argument("directory", type=click.Path())
@click.option("--peer", "viewpoint", default=None, help="Weight rules with this peer's ranked-trust costs (for --monoid cost).")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="Write the program to this file instead of stdout.")
def compile_cmd(directory: str, viewpoint: str | None, out_file: str | None) -> None:
    """Print the datalog^sk program of the CDSS in DIRECTORY (a normal selp program).

    \b
    Examples:
      selp cdss compile examples/cdss/bio
      selp cdss compile examples/cdss/bio --peer PBioSQL --out bio.dl
      selp topk bio.dl --db DB --pattern 'B_o(3, 2)' -k 3 --monoid cost
    """
    from selp.cdss.compile import compile_cdss
    from selp.cdss.config import load_cdss

    compiled = compile_cdss(load_cdss(directory), viewpoint)
    if out_file:
        from selp.database import write_text

        write_text(Path(out_file), compiled.text)
        click.echo(f"wrote {out_file}", err=True)
    else:
        click.echo(compiled.text, nl=False)


@cdss.command(name="eval")
@click.argument("directory", type=click.Path())
@click.option("--data", "data_dir", type=click.Path(file_okay=False), default=None, help="Base data: DATA/<peer>/<relation>.csv [default: DIRECTORY/data].")
@click.option("--engine", type=click.Choice(["local", "spark"]), default=None, help="Evaluation engine [default: SELP_ENGINE, else selp.toml beside cdss.toml, else spark].")
@click.option("--relation", "relations", multiple=True, metavar="R", help="Print only R (or PEER.R); repeatable.")
@click.option("--with-nulls", is_flag=True, help="Keep tuples holding labeled nulls (default: certain answers only).")
@click.option("--master", default=None, help="Spark master URL (spark engine).")
def eval_cmd(directory: str, data_dir: str | None, engine: str | None, relations: tuple[str, ...], with_nulls: bool, master: str | None) -> None:
    """Compute every peer's instance from the base data and print it.

    \b
    Examples:
      selp cdss eval examples/cdss/bio --engine local
      selp cdss eval examples/cdss/bio --engine local --relation U --with-nulls
    """
    from selp.cdss.config import CONFIG_FILE, load_cdss
    from selp.cdss.evaluate import evaluate_cdss
    from selp.config import choose_engine
    from selp.database import sorted_rows
    from selp.values import format_value

    c = load_cdss(directory)
    toml = Path(c.source or Path(directory) / CONFIG_FILE)
    engine = choose_engine(engine, toml)
    wanted = [_find_relation(c, r) for r in relations] or [r.ref for r in c.relations()]
    if data_dir is None:
        default = toml.parent / "data"
        data_dir = str(default) if default.is_dir() else None
    spark = None
    if engine == "spark":
        from selp.engines.spark_session import get_spark

        click.echo(f"starting Spark ({master or 'local'}) ...", err=True)
        try:
            spark = get_spark(master)
        except Exception as err:  # Py4J/PySpark errors: one line, not a JVM stack
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise SelpError(f"could not start Spark: {first}") from None
    elif master:
        raise SelpError("--master applies to the spark engine; add --engine spark")
    result = evaluate_cdss(c, data_dir, engine, spark=spark, with_nulls=with_nulls)
    try:
        what = "with labeled nulls" if with_nulls else "certain answers"
        for i, ref in enumerate(wanted):
            rows = sorted_rows(result.instances[ref])
            rel = c.relation(ref)
            if i:
                click.echo("")
            click.echo(f"{ref.peer}.{ref.name}({', '.join(rel.attribute_names)}): {len(rows)} tuple(s), {what}")
            for row in rows:
                click.echo(f"  {ref.name}({', '.join(format_value(v) for v in row)})")
    finally:
        result.close()


def _find_relation(c, text: str):
    from selp.cdss.model import RelationRef

    if "." in text:
        peer, _, name = text.partition(".")
        if any(r.ref == RelationRef(peer, name) for r in c.relations()):
            return RelationRef(peer, name)
        raise SelpError(f"--relation {text}: no such relation")
    found = [r.ref for r in c.relations() if r.name == text]
    if len(found) == 1:
        return found[0]
    if not found:
        known = ", ".join(c.display_name(r.ref) for r in c.relations())
        raise SelpError(f"--relation {text}: no such relation (relations: {known})")
    raise SelpError(f"--relation {text} is ambiguous: {', '.join(str(r) for r in found)}")
