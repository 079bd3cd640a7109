"""``selp instrument``: rewrite a program so that it derives exactly the trees of a pattern."""

from __future__ import annotations

import json
from pathlib import Path

import click

from selp.cli.root import load_program


@click.command(name="instrument")
@click.argument("program", type=click.Path(dir_okay=False))
@click.option("--pattern", "pattern_text", required=True, help="A selPQL tree pattern, e.g. 'dealsWith(Cuba, *) // exports(Cuba, tobacco)'.")
@click.option("--db", "db_dir", type=click.Path(file_okay=False), help="Database directory, to type the pattern's constants like the data.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="Write the instrumented program to this file (atomically) instead of stdout.")
@click.option("--no-optimize", is_flag=True, help="Skip the optimisations: constant propagation, EDB leaves without copies, copies of P's relations replaced by them.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def instrument_cmd(program: str, pattern_text: str, db_dir: str | None, out_file: str | None, no_optimize: bool, as_json: bool) -> None:
    """Rewrite PROGRAM so that its R@v0 relations derive exactly the trees matching --pattern.

    The instrumented program is a normal selp program: it can be saved, checked and evaluated.
    A summary (rules before/after, per pattern node, time) goes to stderr.

    \b
    Examples:
      selp instrument examples/trade/trade.dl --pattern 'dealsWith(Cuba, *) // exports(Cuba, tobacco)'
      selp instrument prog.dl --pattern 'tc(1, *)[/ edge, // tc]' --out prog.p.dl
      selp instrument prog.dl --pattern 'tc(1, *) // edge(*, 5) OR tc(*, 1) / edge'
    """
    from selp.database import column_types, write_text
    from selp.instrument.instrument import instrument
    from selp.instrument.summary import summarize
    from selp.language.pattern_parser import check_pattern, parse_pattern
    from selp.language.printer import format_program

    analysis = load_program(program)
    pattern = parse_pattern(pattern_text)
    for w in check_pattern(pattern, analysis, column_types(analysis, db_dir)):
        click.echo(f"warning: {w}", err=True)
    result = instrument(analysis, pattern, optimize=not no_optimize)
    summary = summarize(analysis, pattern, result, optimize=not no_optimize)
    text = format_program(result.program)
    if out_file:
        write_text(Path(out_file), text)
    elif not as_json:
        click.echo(text, nl=False)
    if as_json:
        click.echo(json.dumps({k: v for k, v in summary.items() if k != "lines"}, indent=2))
    else:
        for line in summary["lines"]:
            click.echo(line, err=True)
