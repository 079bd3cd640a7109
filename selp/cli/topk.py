"""``selp topk``, ``selp explain``, ``selp query`` (the k best derivation trees, by a pattern, a
fact or a selPQL query) and ``selp trees`` (trees of a saved DTable)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable

import click

from selp.cli.params import TREES_PER_FACT, monoid_plugin_option
from selp.cli.root import ENGINE_CHOICES, ENGINE_HELP, choose_program_engine, load_program, parse_conf, start_spark_soon
from selp.errors import SelpError


def _topk_options(f: Callable) -> Callable:
    """Options shared by topk, explain and query."""
    opts = [
        click.option("--db", "db_dir", type=click.Path(file_okay=False), help="Directory of REL.csv / REL.parquet files."),
        click.option("--engine", type=click.Choice(ENGINE_CHOICES), default=None, help=ENGINE_HELP),
        click.option("--algorithm", type=click.Choice(["heuristic", "iterative"]), default="heuristic", show_default=True, help="Local top-k algorithm (paper sections 5.3 / 5.2)."),
        click.option("--format", "fmt", type=click.Choice(["text", "json", "jsonl", "dtable-jsonl", "svg", "dot", "summary"]), default="text", show_default=True, help="Tree drawings, the JSON contract, JSON lines (one answer a line), the shared-subtree form (dtable-jsonl: facts, entries and answers by id; docs/topk.md), an SVG picture (drawn by selp), Graphviz DOT (render with Graphviz's dot), or a summary per relation (counts and weights, no trees: for very many answers)."),
        click.option("--fact", "fact_text", default=None, help="Only answers carrying this label, e.g. 'dealsWith(Cuba, *)'."),
        click.option("--out", "out_file", type=click.Path(dir_okay=False), help="Write the output to this file (atomically) instead of stdout."),
        click.option("--save-dtable", "save_dir", type=click.Path(file_okay=False), help="Save the DTable here (Parquet) for `selp trees`."),
        click.option("--master", default=None, help="Spark master URL."),
        click.option("--conf", multiple=True, metavar="KEY=VALUE", help="Extra Spark configuration; repeatable."),
        click.option("-q", "--quiet", is_flag=True, help="No progress on stderr."),
    ]
    for o in reversed(opts):
        f = o(f)
    return monoid_plugin_option(f)


def _run_topk(program: str, pattern: Any, pattern_text: str | None, k: int, monoid: str, opts: dict[str, Any],
              short: bool = False) -> None:
    """Compute, then print or write the answers in the chosen format (``short``: a goal-directed
    one-shot, whose Spark session is started for a short run)."""
    from selp.topk.api import parse_fact_filter, progress_text, topk

    analysis = load_program(program)
    engine, eng = choose_program_engine(opts["engine"], program, opts["master"], opts["conf"])
    fact_filter = parse_fact_filter(opts["fact_text"]) if opts["fact_text"] else None
    quiet = opts["quiet"]
    spark = None
    if eng.needs_spark_session:
        # the JVM starts while the Spark top-k is imported (a second or so of Python)
        session = start_spark_soon(opts["master"], parse_conf(opts["conf"]), quiet, short)
        import selp.topk.spark  # noqa: F401
        import selp.topk.trees  # noqa: F401
        spark = session()
    t0 = time.perf_counter()

    def progress(*args: Any) -> None:
        if quiet or time.perf_counter() - t0 <= 1.0:
            return
        click.echo(f"  top-k {progress_text(*args)} ({time.perf_counter() - t0:.1f}s)", err=True)

    warn = (lambda msg: None) if quiet else (lambda msg: click.echo(f"warning: {msg}", err=True))
    table = topk(analysis, opts["db_dir"], pattern, k, monoid, engine, opts["algorithm"], spark, progress, warn, fact=fact_filter)
    if not quiet:
        from selp.engines.result import plan_line

        for step in table.plan:
            if step["mode"] != "one pass":  # the recursive components: how their DTables were made
                click.echo(plan_line(step), err=True)
    if pattern_text is not None:
        table.pattern = pattern_text
    if opts["save_dir"]:
        from selp.topk.dtable import save_dtable

        save_dtable(table, opts["save_dir"])
    n = _emit(table, fact_filter, opts["fmt"], opts["out_file"])
    if not quiet:
        note = getattr(table, "stats_note", None)  # how the engine computed it, where it says
        click.echo(f"({engine} engine, {n} fact(s), k={k}, monoid {table.monoid}{f', {note}' if note else ''},"
                   f" {time.perf_counter() - t0:.2f}s)", err=True)


def _write_or_echo(text: str, out_file: str | None) -> None:
    if out_file:
        from selp.database import write_text

        write_text(Path(out_file), text)
    else:
        click.echo(text, nl=False)


def _emit(table: Any, fact_filter: Any, fmt: str, out_file: str | None) -> int:
    """Print (or write to ``out_file``) the answers in ``fmt``; the number of facts shown."""
    from selp.topk.trees import answers, iter_json, render_dot, render_summary, render_text, summarize, to_json

    if fmt == "summary":
        summary = summarize(table, fact_filter)
        _write_or_echo(render_summary(summary), out_file)
        return sum(s["facts"] for s in summary.values())
    tty_json = fmt == "json" and out_file is None and sys.stdout.isatty()
    if fmt in ("text", "json", "jsonl", "dtable-jsonl") and not tty_json:
        return _stream(table, fact_filter, fmt, out_file)
    results = answers(table, fact_filter)
    if fmt == "json":
        # indented for a person at a terminal; compact for files and pipes (outputs can be large)
        indent = 2 if out_file is None and sys.stdout.isatty() else None
        text = "".join(iter_json(to_json(table, results), indent)) + "\n"  # a deep tree defeats json.dumps
    elif fmt == "dot":
        text = render_dot(results)
    elif fmt == "svg":
        from selp.topk.svg import render_svg

        text = render_svg(results)
    elif out_file is None and results:
        # streamed: the drawing of a large k can be far larger than the DTable behind it
        from selp.topk.trees import iter_text

        for chunk in iter_text(results):
            click.echo(chunk, nl=False)
        return len(results)
    else:
        text = render_text(results) if results else "no derivation matches\n"
    _write_or_echo(text, out_file)
    return len(results)


def _stream(table: Any, fact_filter: Any, fmt: str, out_file: str | None) -> int:
    """Write the trees straight from the DTable's arrays (:mod:`selp.topk.render`), in chunks,
    with progress on stderr when it takes more than a second; the number of facts shown."""
    from selp.topk import flat, render
    from selp.topk.embedded import ArrayDTable

    t0 = time.perf_counter()
    last = [t0]

    def progress(done: int, total: int) -> None:
        now = time.perf_counter()
        if now - t0 > 1.0 and now - last[0] >= 1.0 and sys.stderr.isatty():
            last[0] = now
            what = "entries" if fmt == "dtable-jsonl" else "facts"
            click.echo(f"  writing: {done:,} of {total:,} {what} ({now - t0:.1f}s)", err=True)

    answers = flat.from_arrays(table, fact_filter) if isinstance(table, ArrayDTable) else flat.from_entries(table, fact_filter)
    if out_file:
        from selp.outfile import open_output

        with open_output(out_file, "wb") as fh:
            return render.write(answers, fmt, fh, progress)
    sys.stdout.flush()
    n = render.write(answers, fmt, sys.stdout.buffer, progress)
    sys.stdout.buffer.flush()
    return n


_K_HELP = f"Trees per fact (1 to {2**31 - 1})."
_MONOID_HELP = "confidence, min-confidence, size, access, cost, or a plug-in (see --monoid-plugin)."


@click.command(name="topk")
@click.argument("program", type=click.Path(dir_okay=False))
@click.option("--pattern", "pattern_text", required=True, help="A selPQL pattern, e.g. 'dealsWith(Cuba, *) // exports(Cuba, tobacco)'.")
@click.option("-k", "k", type=TREES_PER_FACT, default=3, show_default=True, help=_K_HELP)
@click.option("--monoid", default="confidence", show_default=True, help=_MONOID_HELP)
@_topk_options
def topk_cmd(program: str, pattern_text: str, k: int, monoid: str, **opts: Any) -> None:
    """The k best derivation trees matching --pattern, for every fact at the pattern's root.

    \b
    Examples:
      selp topk examples/trade/trade.dl --db examples/trade/db -k 2 --pattern 'dealsWith(Cuba, *) // exports(Cuba, tobacco)'
      selp topk prog.dl --db data/ --pattern 'tc(1, *)' -k 5 --monoid cost --format json --out top.json
    """
    _run_topk(program, pattern_text, pattern_text, k, monoid, opts)


@click.command(name="explain")
@click.argument("program", type=click.Path(dir_okay=False))
@click.argument("fact")
@click.option("-k", "k", type=TREES_PER_FACT, default=3, show_default=True, help=_K_HELP)
@click.option("--monoid", default="confidence", show_default=True, help=_MONOID_HELP)
@_topk_options
def explain_cmd(program: str, fact: str, k: int, monoid: str, **opts: Any) -> None:
    """Why does FACT hold? Its k best derivation trees, whatever they contain.

    FACT is an atom such as 'dealsWith(Cuba, France)'; '*' arguments explain every matching fact.

    \b
    Examples:
      selp explain examples/trade/trade.dl --db examples/trade/db 'dealsWith(Cuba, France)' -k 2
    """
    from selp.language.pattern import TreePattern
    from selp.topk.api import parse_fact_filter

    node = parse_fact_filter(fact)
    # a fact with a constant is explained goal-directed: a short run, mostly JVM warm-up on Spark
    _run_topk(program, TreePattern(node), fact, k, monoid, opts, short=any(v is not None for v in node.args or ()))


@click.command(name="query")
@click.argument("program", type=click.Path(dir_okay=False))
@click.argument("query")
@_topk_options
def query_cmd(program: str, query: str, **opts: Any) -> None:
    """Run a selPQL query: TOP k PATTERN RANK BY MONOID.

    \b
    Examples:
      selp query examples/trade/trade.dl --db examples/trade/db 'TOP 2 dealsWith(Cuba, *) // exports(Cuba, tobacco) RANK BY confidence'
    """
    from selp.topk.api import parse_query, parse_query_pattern

    q = parse_query(query)
    if q.k < 1:
        raise SelpError(f"query: k must be at least 1, got {q.k}")
    _run_topk(program, parse_query_pattern(q), q.pattern_text, q.k, q.monoid, opts)


@click.command(name="trees")
@click.argument("dtable_dir", type=click.Path(file_okay=False))
@click.option("--fact", "fact_text", default=None, help="Only answers carrying this label, e.g. 'dealsWith(Cuba, *)'.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "jsonl", "dtable-jsonl", "svg", "dot"]), default="text", show_default=True, help="Tree drawings, JSON, JSON lines, the shared-subtree form (docs/topk.md), an SVG picture (drawn by selp), or Graphviz DOT (render with Graphviz's dot).")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="Write to this file instead of stdout.")
@monoid_plugin_option
def trees_cmd(dtable_dir: str, fact_text: str | None, fmt: str, out_file: str | None) -> None:
    """List trees from a DTable saved with --save-dtable, without recomputing.

    \b
    Examples:
      selp trees dtable/ --fact 'dealsWith(Cuba, France)'
    """
    from selp.topk.api import check_saved_fact_filter, parse_fact_filter
    from selp.topk.dtable import load_dtable

    fact_filter = parse_fact_filter(fact_text) if fact_text else None
    table = load_dtable(dtable_dir)
    if fact_filter is not None:
        check_saved_fact_filter(fact_filter, table)
    _emit(table, fact_filter, fmt, out_file)
