"""The ``selp`` command line.

Exit codes: 0 success, 1 a user error (bad program, data or option value; one located line on
stderr), 2 a usage error (unknown option, missing argument).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Callable, NoReturn

import click

from selp.engines.registry import names as engine_names
from selp.cli_params import TREES_PER_FACT, monoid_plugin_option
from selp.errors import SelpError, echo, one_line

EXAMPLE_PROGRAM = "examples/trade/trade.dl"
ENGINE_CHOICES = engine_names()  # the registry's names, and local (the old name of reference)
ENGINE_HELP = (
    "embedded (DuckDB, in process), spark, or reference (pure Python) [default: --master implies spark,"
    " else SELP_ENGINE, else selp.toml beside the program, else embedded]."
)


def _fail(message: str) -> NoReturn:
    # one line whatever the message holds: an echoed input may be long or span lines
    click.echo(f"error: {one_line(message)}", err=True)
    sys.exit(1)


class _Group(click.Group):
    """Turns user errors raised anywhere below into one line and exit code 1."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except SelpError as err:
            _fail(str(err))
        except RecursionError:
            # a safety net: parsers bound nesting, but a derivation tree computed from the data
            # (a path of a thousand steps) is drawn recursively
            _fail("too deeply nested to process: a derivation tree (or an input) is deeper than Python's recursion allows")


def _load(program: str):
    from selp.language import parse_program_file
    from selp.language.validate import analyze

    return analyze(parse_program_file(program))


def _parse_conf(values: tuple[str, ...]) -> dict[str, str]:
    conf = {}
    for kv in values:
        if "=" not in kv:
            raise SelpError(f"--conf expects key=value, got {echo(kv)}")
        k, v = kv.split("=", 1)
        conf[k.strip()] = v.strip()
    return conf


def _start_spark(master: str | None, conf: dict[str, str], quiet: bool):
    """A Spark session (announced on stderr unless ``quiet``), or a one-line explanation of why
    none could start."""
    from selp.engines.spark_session import start_spark

    return start_spark(master, conf, None if quiet else lambda msg: click.echo(msg, err=True))


def _progress_printer(quiet: bool, always: bool) -> Callable:
    """Per-iteration progress on stderr; for in-process engines only once a run takes a while."""
    start = time.perf_counter()

    def report(comp, iteration: int, delta: int, total: int) -> None:
        if quiet:
            return
        if not always and time.perf_counter() - start < 1.0:
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
      selp eval prog.dl --db data/ --master spark://host:7077 --out results/
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
    from selp.config import choose_engine
    from selp.engines.registry import get_engine
    from selp.values import format_value

    analysis = _load(program)
    engine = choose_engine(engine, program, master)
    eng = get_engine(engine)
    if not eng.needs_spark_session and (master or conf):
        raise SelpError("--master/--conf apply to the spark engine; add --engine spark")
    progress = _progress_printer(quiet, eng.needs_spark_session)
    spark = _start_spark(master, _parse_conf(conf), quiet) if eng.needs_spark_session else None
    result = eng.run(analysis, db_dir, progress, spark)
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


@main.command(name="instrument")
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
    from selp.instrument.instrument import instrument
    from selp.instrument.summary import summarize
    from selp.language.pattern_parser import check_pattern, parse_pattern
    from selp.language.printer import format_program
    from selp.language.types import resolve_types

    analysis = _load(program)
    pattern = parse_pattern(pattern_text)
    if db_dir:
        from selp.database import load_database

        types = load_database(analysis, db_dir).types
    else:
        types = resolve_types(analysis)
    for w in check_pattern(pattern, analysis, types):
        click.echo(f"warning: {w}", err=True)
    result = instrument(analysis, pattern, optimize=not no_optimize)
    summary = summarize(analysis, pattern, result, optimize=not no_optimize)
    text = format_program(result.program)
    if out_file:
        from selp.database import write_text

        write_text(Path(out_file), text)
    elif not as_json:
        click.echo(text, nl=False)
    if as_json:
        click.echo(json.dumps({k: v for k, v in summary.items() if k != "lines"}, indent=2))
    else:
        for line in summary["lines"]:
            click.echo(line, err=True)


def _topk_options(f: Callable) -> Callable:
    """Options shared by topk, explain and query."""
    opts = [
        click.option("--db", "db_dir", type=click.Path(file_okay=False), help="Directory of REL.csv / REL.parquet files."),
        click.option("--engine", type=click.Choice(ENGINE_CHOICES), default=None, help=ENGINE_HELP),
        click.option("--algorithm", type=click.Choice(["heuristic", "iterative"]), default="heuristic", show_default=True, help="Local top-k algorithm (paper sections 5.3 / 5.2)."),
        click.option("--format", "fmt", type=click.Choice(["text", "json", "dot", "summary"]), default="text", show_default=True, help="Tree drawings, the JSON contract, Graphviz, or a summary per relation (counts and weights, no trees: for very many answers)."),
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


def _run_topk(program: str, pattern, pattern_text: str | None, k: int, monoid: str, opts: dict) -> None:
    """Compute, then print or write the answers in the chosen format."""
    from selp.config import choose_engine
    from selp.engines.registry import get_engine
    from selp.topk.api import parse_fact_filter, topk

    analysis = _load(program)
    engine = choose_engine(opts["engine"], program, opts["master"])
    needs_spark = get_engine(engine).needs_spark_session
    if not needs_spark and (opts["master"] or opts["conf"]):
        raise SelpError("--master/--conf apply to the spark engine; add --engine spark")
    fact_filter = parse_fact_filter(opts["fact_text"]) if opts["fact_text"] else None
    quiet = opts["quiet"]
    spark = _start_spark(opts["master"], _parse_conf(opts["conf"]), quiet) if needs_spark else None
    t0 = time.perf_counter()

    def progress(*args) -> None:
        if quiet or time.perf_counter() - t0 <= 1.0:
            return
        if len(args) == 3:  # spark: (round, changed entries, entries)
            what = f"round {args[0]}: {args[1]} changed, {args[2]} entries"
        elif isinstance(args[0], str):  # embedded: a step done
            what = args[0]
        else:  # local: (entries so far,)
            what = f"{args[0]} entries"
        click.echo(f"  top-k {what} ({time.perf_counter() - t0:.1f}s)", err=True)

    warn = (lambda msg: None) if quiet else (lambda msg: click.echo(f"warning: {msg}", err=True))
    table = topk(analysis, opts["db_dir"], pattern, k, monoid, engine, opts["algorithm"], spark, progress, warn, fact=fact_filter)
    if pattern_text is not None:
        table.pattern = pattern_text
    if opts["save_dir"]:
        from selp.topk.dtable import save_dtable

        save_dtable(table, opts["save_dir"])
    n = _emit(table, fact_filter, opts["fmt"], opts["out_file"])
    if not quiet:
        click.echo(f"({engine} engine, {n} fact(s), k={k}, monoid {table.monoid}, {time.perf_counter() - t0:.2f}s)", err=True)


def _emit(table, fact_filter, fmt: str, out_file: str | None) -> int:
    from selp.topk.trees import answers, iter_json, render_dot, render_text, summarize, to_json

    if fmt == "summary":
        summary = summarize(table, fact_filter)
        text = "".join(
            f"{rel}: {s['facts']} fact(s), {s['entries']} tree(s); best weight {s['best']}, worst top-1 weight {s['worst_top1']}\n"
            for rel, s in sorted(summary.items())
        ) or "no derivation matches\n"
        if out_file:
            from selp.database import write_text

            write_text(Path(out_file), text)
        else:
            click.echo(text, nl=False)
        return sum(s["facts"] for s in summary.values())
    results = answers(table, fact_filter)
    if fmt == "json":
        # indented for a person at a terminal; compact for files and pipes (outputs can be large)
        indent = 2 if out_file is None and sys.stdout.isatty() else None
        text = "".join(iter_json(to_json(table, results), indent)) + "\n"  # a deep tree defeats json.dumps
    elif fmt == "dot":
        text = render_dot(results)
    elif out_file is None and results:
        # streamed: the drawing of a large k can be far larger than the DTable behind it
        from selp.topk.trees import iter_text

        for chunk in iter_text(results):
            click.echo(chunk, nl=False)
        return len(results)
    else:
        text = render_text(results) if results else "no derivation matches\n"
    if out_file:
        from selp.database import write_text

        write_text(Path(out_file), text)
    else:
        click.echo(text, nl=False)
    return len(results)


@main.command(name="topk")
@click.argument("program", type=click.Path(dir_okay=False))
@click.option("--pattern", "pattern_text", required=True, help="A selPQL pattern, e.g. 'dealsWith(Cuba, *) // exports(Cuba, tobacco)'.")
@click.option("-k", "k", type=TREES_PER_FACT, default=3, show_default=True, help=f"Trees per fact (1 to {2**31 - 1}).")
@click.option("--monoid", default="confidence", show_default=True, help="confidence, min-confidence, size, access, cost, or a plug-in (see --monoid-plugin).")
@_topk_options
def topk_cmd(program: str, pattern_text: str, k: int, monoid: str, **opts) -> None:
    """The k best derivation trees matching --pattern, for every fact at the pattern's root.

    \b
    Examples:
      selp topk examples/trade/trade.dl --db examples/trade/db -k 2 --pattern 'dealsWith(Cuba, *) // exports(Cuba, tobacco)'
      selp topk prog.dl --db data/ --pattern 'tc(1, *)' -k 5 --monoid cost --format json --out top.json
    """
    _run_topk(program, pattern_text, pattern_text, k, monoid, opts)


@main.command(name="explain")
@click.argument("program", type=click.Path(dir_okay=False))
@click.argument("fact")
@click.option("-k", "k", type=TREES_PER_FACT, default=3, show_default=True, help=f"Trees per fact (1 to {2**31 - 1}).")
@click.option("--monoid", default="confidence", show_default=True, help="confidence, min-confidence, size, access, cost, or a plug-in (see --monoid-plugin).")
@_topk_options
def explain_cmd(program: str, fact: str, k: int, monoid: str, **opts) -> None:
    """Why does FACT hold? Its k best derivation trees, whatever they contain.

    FACT is an atom such as 'dealsWith(Cuba, France)'; '*' arguments explain every matching fact.

    \b
    Examples:
      selp explain examples/trade/trade.dl --db examples/trade/db 'dealsWith(Cuba, France)' -k 2
    """
    from selp.topk.api import parse_fact_filter

    node = parse_fact_filter(fact)
    from selp.language.pattern import TreePattern

    _run_topk(program, TreePattern(node), fact, k, monoid, opts)


@main.command(name="query")
@click.argument("program", type=click.Path(dir_okay=False))
@click.argument("query")
@_topk_options
def query_cmd(program: str, query: str, **opts) -> None:
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


@main.command(name="trees")
@click.argument("dtable_dir", type=click.Path(file_okay=False))
@click.option("--fact", "fact_text", default=None, help="Only answers carrying this label, e.g. 'dealsWith(Cuba, *)'.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "dot"]), default="text", show_default=True)
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="Write to this file instead of stdout.")
@monoid_plugin_option
def trees_cmd(dtable_dir: str, fact_text: str | None, fmt: str, out_file: str | None) -> None:
    """List trees from a DTable saved with --save-dtable, without recomputing.

    \b
    Examples:
      selp trees dtable/ --fact 'dealsWith(Cuba, France)'
    """
    from selp.topk.api import check_fact_filter, parse_fact_filter
    from selp.topk.dtable import load_dtable

    fact_filter = parse_fact_filter(fact_text) if fact_text else None
    table = load_dtable(dtable_dir)
    if fact_filter is not None:
        # the relations of P the DTable knows (its P_p relations by their origin), as topk has them
        types = {table.relation_origin.get(r, r): t for r, t in table.types.items()}
        check_fact_filter(fact_filter, {r: len(t) for r, t in types.items()}, types, "the saved DTable")
    _emit(table, fact_filter, fmt, out_file)


@main.group()
def gen() -> None:
    """Generate benchmark datasets.

    \b
    Example:
      selp gen tc --target-output 100000 --out /tmp/tc100k
    """


def _scaled_or_units(dataset: str, out_dir: str, scale: int | None, units: int | None, unit_option: str, seed: int) -> None:
    """Generate by --scale (calibrated output size) or by the generator's own unit; print stats."""
    from selp.bench.datasets import generate_scaled

    if (scale is None) == (units is None):
        raise click.UsageError(f"give either --scale or {unit_option}")
    if scale is not None:
        stats = generate_scaled(dataset, out_dir, scale, seed)
    elif dataset == "iris":
        from selp.gen.iris import generate_iris

        stats = generate_iris(out_dir, units, seed)  # type: ignore[arg-type]
    elif dataset == "amie":
        from selp.gen.amie import generate_amie

        stats = generate_amie(out_dir, units, seed)  # type: ignore[arg-type]
    else:
        from selp.gen.explain import generate_explain

        stats = generate_explain(out_dir, units, seed)  # type: ignore[arg-type]
    click.echo(json.dumps(stats, indent=2))


_SCALE_HELP = "About this many output tuples (every IDB relation), calibrated from measured runs."


@gen.command(name="tc")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Database directory to write edge.csv into.")
@click.option("--scale", "--target-output", "target_output", type=click.IntRange(min=4), help="Choose the graph size for about this many tc tuples (exact to within 1% above a few thousand).")
@click.option("--nodes", type=click.IntRange(min=2), help="Number of nodes (with --edges).")
@click.option("--edges", type=click.IntRange(min=1), help="Number of undirected edges (edge.csv gets both directions).")
@click.option("--components", type=click.IntRange(min=1), default=None, help="Split the nodes into this many connected components.")
@click.option("--seed", type=int, default=0, show_default=True)
def gen_tc(out_dir: str, target_output: int | None, nodes: int | None, edges: int | None, components: int | None, seed: int) -> None:
    """A random undirected weighted graph for datasets/tc.dl; prints its statistics as JSON.

    \b
    Examples:
      selp gen tc --scale 1000000 --out /tmp/tc1m
      selp gen tc --nodes 1000 --edges 2500 --components 4 --seed 7 --out /tmp/tc
      selp eval datasets/tc.dl --db /tmp/tc1m
    """
    from selp.gen.tc import generate_tc, tc_size_for

    if target_output is not None:
        if nodes is not None or edges is not None or components is not None:
            raise click.UsageError("--scale chooses --nodes/--edges/--components; give either it or them")
        nodes, edges, components = tc_size_for(target_output)
    elif nodes is None or edges is None:
        raise click.UsageError("give --scale, or --nodes and --edges")
    try:
        stats = generate_tc(out_dir, nodes, edges, seed, components)
    except ValueError as err:
        raise SelpError(str(err)) from None
    click.echo(json.dumps(stats, indent=2))


@gen.command(name="amie")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Database directory to write the CSV files into.")
@click.option("--scale", type=click.IntRange(min=10), help=_SCALE_HELP)
@click.option("--persons", type=click.IntRange(min=2), help="Number of persons instead of --scale; the output of datasets/amie.dl is about 9-13 facts per person.")
@click.option("--seed", type=int, default=0, show_default=True)
def gen_amie(out_dir: str, scale: int | None, persons: int | None, seed: int) -> None:
    """A synthetic YAGO-like knowledge base for datasets/amie.dl; prints its statistics as JSON.

    \b
    Examples:
      selp gen amie --scale 100000 --out /tmp/amie100k
      selp gen amie --persons 10000 --out /tmp/amie10k
      selp topk datasets/amie.dl --db /tmp/amie10k --pattern 'livesIn(person1, *) // wasBornIn(*, city1)'
    """
    _scaled_or_units("amie", out_dir, scale, persons, "--persons", seed)


@gen.command(name="iris")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Database directory to write a.csv .. d.csv into.")
@click.option("--scale", type=click.IntRange(min=10), help=_SCALE_HELP)
@click.option("--records", type=click.IntRange(min=2), help="Number of record ids instead of --scale; datasets/iris.dl derives about 44 facts per record.")
@click.option("--seed", type=int, default=0, show_default=True)
def gen_iris(out_dir: str, scale: int | None, records: int | None, seed: int) -> None:
    """Random link relations for datasets/iris.dl; prints their statistics as JSON.

    \b
    Examples:
      selp gen iris --scale 100000 --out /tmp/iris100k
      selp gen iris --records 10000 --out /tmp/iris10k
      selp topk datasets/iris.dl --db /tmp/iris10k --pattern 'path // ab // b' -k 3
    """
    _scaled_or_units("iris", out_dir, scale, records, "--records", seed)


@gen.command(name="explain")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Database directory to write the CSV files into.")
@click.option("--scale", type=click.IntRange(min=10), help=_SCALE_HELP)
@click.option("--agents", type=click.IntRange(min=2), help="Number of agents instead of --scale; datasets/explain.dl derives about 75-80 facts per agent.")
@click.option("--seed", type=int, default=0, show_default=True)
def gen_explain(out_dir: str, scale: int | None, agents: int | None, seed: int) -> None:
    """A random agent network for datasets/explain.dl; prints its statistics as JSON.

    \b
    Examples:
      selp gen explain --scale 100000 --out /tmp/explain100k
      selp gen explain --agents 1000 --out /tmp/explain1k
      selp topk datasets/explain.dl --db /tmp/explain1k --pattern 'level(*, *) // base(*, *)' -k 3
    """
    _scaled_or_units("explain", out_dir, scale, agents, "--agents", seed)


@gen.command(name="cdss")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="CDSS directory to write (cdss.toml and data/<peer>/<relation>.csv).")
@click.option("--peers", type=click.IntRange(min=1), required=True, help="Number of peers P0..P{N-1}.")
@click.option("--base-size", "base_size", type=click.IntRange(min=0), required=True, help="Base entries per peer (one tuple per entry in each of its relations).")
@click.option("--fanout", default="1", show_default=True, help="Incoming mappings per non-root peer: N or LO-HI (e.g. 1-3).")
@click.option("--topology", type=click.Choice(["chain", "tree", "random"]), default="chain", show_default=True, help="Spanning tree of the mappings.")
@click.option("--overlap", type=click.FloatRange(0, 1), default=0.2, show_default=True, help="Share of each peer's entries drawn from a pool all peers share.")
@click.option("--seed", type=int, default=0, show_default=True)
def gen_cdss(out_dir: str, peers: int, base_size: int, fanout: str, topology: str, overlap: float, seed: int) -> None:
    """A SWISS-PROT-like CDSS (selp.cdss.gen_swissprot); prints its statistics as JSON.

    \b
    Examples:
      selp gen cdss --peers 10 --base-size 2000 --fanout 1-3 --topology random --out /tmp/sp10
      selp cdss check /tmp/sp10 && selp cdss eval /tmp/sp10
    """
    from selp.gen.swissprot import generate_cdss

    try:
        stats = generate_cdss(out_dir, peers, base_size, fanout, topology, seed, overlap)
    except ValueError as err:
        raise SelpError(str(err)) from None
    click.echo(json.dumps(stats, indent=2))


def _int_list(text: str, option: str, minimum: int) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SelpError(f"{option} expects comma-separated integers, got {echo(text)}") from None
    if not values or min(values) < minimum:
        raise SelpError(f"{option} expects integers >= {minimum}, got {echo(text)}")
    return values


BENCH_TARGETS = ("iris", "amie", "explain", "tc", "instrument", "topk", "cdss", "proql", "anchors")


@main.command()
@click.argument("dataset")
@click.option("--scales", default=None, help="Comma-separated scales (approximate output tuples) [default: the dataset's, e.g. 10000,50000,200000].")
@click.option("--patterns", default="all", show_default=True, help="Comma-separated pattern names of datasets/DATASET.patterns, or all.")
@click.option("-k", "ks", default="1,3,7", show_default=True, help="Comma-separated k values for top-k (full provenance runs at k=3 if listed, else the first).")
@click.option("--engine", "--engines", "engines", multiple=True, help="embedded, reference and/or spark (repeatable or comma-separated) [default: embedded]; anchors: the engines of `selp eval`, among embedded, reference, spark [default: embedded,reference].")
@click.option("--modes", default="semi-naive,top-k,full-provenance", show_default=True, help="Which of semi-naive, top-k, full-provenance to run.")
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True, help="Timed runs per configuration (after --warmup untimed ones); the median is reported.")
@click.option("--warmup", type=click.IntRange(min=0), default=1, show_default=True, help="Untimed runs before the timed ones.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0.1), default=600, show_default=True, help="Seconds per run before the configuration is reported as 'did not finish: time cap'.")
@click.option("--memory-cap", "memory_cap", type=click.FloatRange(min=1), default=8192, show_default=True, help="MiB of resident memory per local configuration before 'did not finish: memory cap'.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="bench-out", show_default=True, help="Where results.csv/results.json and the plots go; generated data is cached in OUT/data.")
@click.option("--master", default=None, help="Spark master URL.")
@click.option("--monoid", default="confidence", show_default=True, help="Ranking monoid for top-k and full provenance.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--no-plots", is_flag=True, help="Do not draw the PNG figures.")
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr.")
@click.option("--peers", default="5,10,20", show_default=True, help="cdss only: comma-separated numbers of peers (--scales is then base entries per peer).")
@click.option("--fractions", default="0.1,0.3,0.5", show_default=True, help="cdss only: comma-separated fractions of entries deleted.")
@click.option("--fanout", default="1", show_default=True, help="cdss only: incoming mappings per peer, N or LO-HI.")
@click.option("--topology", type=click.Choice(["chain", "tree", "random"]), default="chain", show_default=True, help="cdss only: spanning tree of the mappings.")
@click.option("--nodes", default=None, help="anchors only: comma-separated graph sizes (nodes; 3N edges) [default: 1000].")
@click.option("--skip-topk", is_flag=True, help="anchors only: no topk/explain runs.")
def bench(dataset: str, scales: str | None, patterns: str, ks: str, engines: tuple[str, ...], modes: str, repeat: int, warmup: int, timeout_s: float, memory_cap: float, out_dir: str, master: str | None, monoid: str, seed: int, no_plots: bool, quiet: bool,
          peers: str, fractions: str, fanout: str, topology: str, nodes: str | None, skip_topk: bool) -> None:
    """Benchmark DATASET (iris, amie, explain, tc): semi-naive vs selective top-k vs full provenance.

    For each scale the dataset is generated (cached in OUT/data), then per engine: plain
    semi-naive evaluation, top-k for each pattern and k, and the full-provenance baseline (every
    rule instance materialised, then the same query), each after a warm-up. Writes
    OUT/results.csv, OUT/results.json and the figures OUT/fig5_*.png (time vs output size) and
    OUT/fig6_*.png (time vs k); prints a Markdown table; progress goes to stderr.

    `selp bench topk` is `selp bench tc --patterns p10 --modes semi-naive,top-k`.
    `selp bench instrument` times instrumentation alone (no data) for every named pattern.

    \b
    Examples:
      selp bench iris --scales 10000,50000 --patterns p1,p3 -k 3 --engine embedded,reference
      selp bench tc --scales 100000 --patterns p10 -k 1,3,7 --engine embedded,spark --repeat 3
      selp bench amie --scales 20000 --timeout 120 --memory-cap 4096 --out results/amie
      selp bench instrument --repeat 5
      selp bench cdss --peers 5,10,20 --scales 200 --fractions 0.1,0.3,0.5 --out results/cdss

    `selp bench cdss` is update exchange on generated SWISS-PROT-like CDSSs (selp.cdss.bench_cdss):
    initial build, 10% insertion and deletions by provenance, DRed and recomputation.

    `selp bench anchors --nodes 1000 --repeat 3` times whole `selp eval/topk/explain` processes
    beside DuckDB's recursive CTE and Nemo on one random graph, path counts checked
    (selp.bench_anchors; --out defaults to datasets/results/anchors, no warm-up, memory cap 12 GiB).
    """
    from selp.bench.results import machine_info

    say = (lambda msg: None) if quiet else (lambda msg: click.echo(msg, err=True))
    if dataset not in BENCH_TARGETS:
        raise SelpError(f"unknown dataset {dataset!r} (choose {', '.join(BENCH_TARGETS)})")
    if dataset == "anchors":  # whole CLI processes beside DuckDB's recursive CTE and Nemo
        from click.core import ParameterSource

        from selp.bench.anchors import DEFAULT_MEMORY_CAP_MB, DEFAULT_OUT, DEFAULT_SEED, cli as anchors_cli

        def given(name: str) -> bool:
            return click.get_current_context().get_parameter_source(name) is not ParameterSource.DEFAULT

        command = "selp bench " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["bench"] else None
        try:
            problems = anchors_cli(nodes, engines, repeat, warmup if given("warmup") else 0, timeout_s,
                                   memory_cap if given("memory_cap") else DEFAULT_MEMORY_CAP_MB, skip_topk,
                                   seed if given("seed") else DEFAULT_SEED, out_dir if given("out_dir") else DEFAULT_OUT,
                                   command, say, click.echo)
        except ValueError as err:
            raise SelpError(str(err)) from None
        if problems:
            raise SelpError(f"path counts disagree ({len(problems)}): {problems[0]}")
        return
    if dataset == "cdss":
        from selp.bench.cdss import bench_cdss, markdown, parse_list, save as save_cdss

        chosen_engines = [e.strip() for e in ",".join(engines).split(",") if e.strip()] or ["embedded"]
        try:
            peer_list, fraction_list = parse_list(peers, "--peers", int), parse_list(fractions, "--fractions", float)
            scale_values = parse_list(scales, "--scales", int) if scales else [200]
            rows = bench_cdss(peer_list, scale_values, fraction_list, fanout=fanout, topology=topology, seed=seed,
                              timeout_s=timeout_s, engine=",".join(chosen_engines), say=say)
        except ValueError as err:
            raise SelpError(str(err)) from None
        click.echo(markdown(rows))
        params = {"peers": peer_list, "scales": scale_values, "fractions": fraction_list, "fanout": fanout, "topology": topology, "seed": seed, "timeout_s": timeout_s}
        for p in save_cdss(rows, out_dir, "selp bench " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["bench"] else None, params):
            say(f"wrote {p}")
        return
    if dataset == "proql":  # ProQL on chapter 8's topologies (selp.cdss.proql.bench; --patterns TOPOLOGY:DATA,...)
        from selp.bench.proql import bench_cli

        command = "selp bench " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["bench"] else None
        click.echo(bench_cli(peers, scales, patterns, repeat, warmup, master, out_dir, command, say))
        return
    if dataset == "instrument":
        from selp.bench.results import write_results
        from selp.bench.instrument import bench_instrument, format_instrument_table

        rows = bench_instrument(repeat=repeat, say=say)
        click.echo(format_instrument_table(rows))
        for p in write_results(rows, out_dir, machine_info()):
            say(f"wrote {p}")
        return
    from selp.bench.harness import MODES, format_markdown, plot, run_bench, save

    if dataset == "topk":  # the earlier top-k benchmark: TC, pattern p10, semi-naive vs top-k
        dataset, patterns, modes = "tc", "p10", "semi-naive,top-k"
    scale_list = _int_list(scales, "--scales", 4) if scales else None
    k_values = _int_list(ks, "-k", 1)
    from selp.engines.registry import canonical, get_engine

    chosen = [canonical(e.strip()) for e in ",".join(engines).split(",") if e.strip()] or ["embedded"]
    mode_list = [m.strip() for m in modes.split(",") if m.strip()]
    for m in mode_list:
        if m not in MODES:
            raise SelpError(f"--modes: unknown mode {m!r} (choose {', '.join(MODES)})")
    from selp.bench.harness import load_patterns

    load_patterns(dataset, patterns)  # a bad name fails before any work
    machine = machine_info()
    machine["loadavg_at_start"] = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    say(f"machine: {machine.get('nproc')} cores, {machine.get('mem_total_gib')} GiB, load average {machine['loadavg_at_start']}")
    spark = _start_spark(master, {}, quiet) if any(get_engine(e).needs_spark_session for e in chosen) else None
    if spark is not None:
        machine["spark_master"] = spark.sparkContext.master
    rows = run_bench(dataset, scale_list, patterns, k_values, chosen, mode_list, repeat, warmup, timeout_s, memory_cap,
                     Path(out_dir) / "data", spark, say, seed, monoid)
    click.echo(format_markdown(rows))
    command = "selp bench " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["bench"] else None
    for p in save(rows, out_dir, machine, command):
        say(f"wrote {p}")
    if not no_plots:
        for p in plot(rows, out_dir, say):
            say(f"wrote {p}")


from selp.cdss.cli import cdss as _cdss  # noqa: E402  (the CDSS commands live with the CDSS)

main.add_command(_cdss)
from selp.cdss.proql.cli import proql as _proql  # noqa: E402  (ProQL over the CDSS store)
main.add_command(_proql)


def _json_value(v):
    from selp.values import Skolem, format_value

    return format_value(v) if isinstance(v, Skolem) else v


if __name__ == "__main__":
    main()
