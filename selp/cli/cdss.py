"""``selp cdss``: peers, schema mappings and update exchange over the CDSS store.

User errors are raised as :class:`~selp.errors.SelpError`; the root group prints them as one
located line and exits 1.
"""

from __future__ import annotations

from pathlib import Path

import click

from selp.cli.params import TREES_PER_FACT, monoid_plugin_option
from selp.cli.root import say_printer, spark_for
from selp.engines.registry import names as engine_names
from selp.errors import SelpError

# every command picks its engine the way `selp eval` does (selp.config.choose_engine), reading
# the selp.toml beside cdss.toml
ENGINE_HELP = (
    "Engine [default: spark with --master, else SELP_ENGINE, else `engine` in selp.toml beside"
    " cdss.toml, else embedded]."
)


def engine_option(help_text: str = ENGINE_HELP):
    """The ``--engine`` option of a ``selp cdss`` command."""
    return click.option("--engine", type=click.Choice(engine_names()), default=None, help=help_text)


@click.group(name="cdss")
def cdss() -> None:
    """Collaborative data sharing: peers, schema mappings and update exchange."""


@cdss.command(name="check")
@click.argument("directory", type=click.Path())
def check_cmd(directory: str) -> None:
    """Validate DIRECTORY/cdss.toml (schemas, mappings, weak acyclicity, trust) and summarise it;
    with a store (after `selp cdss init`), check its database and read every instance file a peer
    relies on, naming any damaged file and what to do.

    \b
    Example:
      selp cdss check examples/cdss/bio
    """
    from selp.cdss.store import DB_FILE, STORE_DIR
    from selp.cdss.summary import summarize_cdss

    click.echo(summarize_cdss(directory))
    if (Path(directory) / STORE_DIR / DB_FILE).is_file():
        with open_store(directory) as s:
            click.echo(s.verify())


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
@engine_option()
@click.option("--relation", "relations", multiple=True, metavar="R", help="Print only R (or PEER.R); repeatable.")
@click.option("--with-nulls", is_flag=True, help="Keep tuples holding labeled nulls (default: certain answers only).")
@click.option("--master", default=None, help="Spark master URL (spark engine).")
def eval_cmd(directory: str, data_dir: str | None, engine: str | None, relations: tuple[str, ...], with_nulls: bool, master: str | None) -> None:
    """Compute every peer's instance from the base data and print it.

    \b
    Examples:
      selp cdss eval examples/cdss/bio
      selp cdss eval examples/cdss/bio --relation U --with-nulls
      selp cdss eval examples/cdss/bio --engine spark --master spark://host:7077
    """
    from selp.cdss.config import CONFIG_FILE, load_cdss
    from selp.cdss.evaluate import evaluate_cdss
    from selp.config import choose_engine
    from selp.database import sorted_rows
    from selp.values import format_value

    c = load_cdss(directory)
    toml = Path(c.source or Path(directory) / CONFIG_FILE)
    engine = choose_engine(engine, toml, master)
    wanted = [c.find_relation(r) for r in relations] or [r.ref for r in c.relations()]
    if data_dir is None:
        default = toml.parent / "data"
        data_dir = str(default) if default.is_dir() else None
    spark = spark_for(engine, master, False)
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


# -- the peer workflow over the durable store (selp.cdss.store) -------------------------------
DIR_ARG = click.argument("directory", type=click.Path(file_okay=False))
PEER_OPT = click.option("--peer", required=True, help="The peer (a name from cdss.toml).")


def open_store(directory: str):
    """The CDSS store of ``directory`` (a context manager)."""
    from selp.cdss.store import Store

    return Store.open(directory)


def _when(ts: float) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def store_engine(engine: str | None, store, master: str | None = None) -> str:
    """The registered engine name for a store command (``--engine``, ``--master``, SELP_ENGINE,
    the selp.toml beside cdss.toml, else embedded)."""
    from selp.cdss.config import CONFIG_FILE
    from selp.config import choose_engine

    return choose_engine(engine, store.directory / CONFIG_FILE, master)


@cdss.command(name="init")
@DIR_ARG
def init_cmd(directory: str) -> None:
    """Create the store of the CDSS in DIRECTORY (DIRECTORY/.selp) from its cdss.toml.

    Refuses when a store exists: edit logs are never discarded by a command; move
    DIRECTORY/.selp away to start over.

    \b
    Example:
      selp cdss init examples/cdss/bio
    """
    from selp.cdss.store import Store

    with Store.init(directory) as s:
        click.echo(f"created {s.root} for {len(s.cdss.peers)} peer(s): {', '.join(p.name for p in s.cdss.peers)}")


def _report_batch(peer: str, result) -> None:
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(f"batch {result.batch} of {peer} recorded (unpublished): {result.summary()}")


@cdss.command(name="edit", context_settings={"ignore_unknown_options": True})
@DIR_ARG
@PEER_OPT
@click.argument("edits", nargs=-1, required=True, type=click.UNPROCESSED)
def edit_cmd(directory: str, peer: str, edits: tuple[str, ...]) -> None:
    """Record one batch of edits of PEER: +R(v, ...) inserts, -R(v, ...) deletes.

    Deleting one of the peer's local tuples removes it from its local data; deleting a tuple it
    only imported records a rejection, which persists across exchanges. The batch is checked
    whole (relations, arities, types, keys) and refused whole on any error.

    \b
    Examples:
      selp cdss edit examples/cdss/bio --peer PBioSQL +'B(3, 5)' +'B(4, 1)'
      selp cdss edit examples/cdss/bio --peer PBioSQL -'B(3, 2)'
    """
    from selp.cdss.edits import apply_batch, parse_edit

    with open_store(directory) as s:
        requests = [parse_edit(s, peer, e) for e in edits]
        _report_batch(peer, apply_batch(s, peer, requests, "edit " + " ".join(edits)))


@cdss.command(name="import")
@DIR_ARG
@PEER_OPT
@click.option("--relation", required=True, help="The peer's relation the file holds.")
@click.option("--delete", is_flag=True, help="Delete the file's tuples instead of inserting them.")
@click.option("--again", is_flag=True, help="Record the file even if the same content was imported before.")
@click.argument("csv_file", metavar="FILE.csv", type=click.Path(dir_okay=False))
def import_cmd(directory: str, peer: str, relation: str, delete: bool, again: bool, csv_file: str) -> None:
    """Record the rows of FILE.csv (a header naming the attributes) as one batch of PEER.

    Importing the same content again for the same peer and relation records nothing (a re-run
    of an import that was interrupted after it committed) unless --again is given.

    \b
    Example:
      selp cdss import examples/cdss/bio --peer PGUS --relation G examples/cdss/bio/data/PGUS/G.csv
    """
    from selp.cdss.edits import AlreadyImported, import_csv

    with open_store(directory) as s:
        try:
            result = import_csv(s, peer, relation, csv_file, delete, again)
        except AlreadyImported as done:
            click.echo(
                f"{csv_file}: already imported as batch {done.batch} of {peer} (same content, relation"
                f" {done.relation}); nothing recorded (--again records it again)"
            )
            return
        _report_batch(peer, result)


@cdss.command(name="reject", context_settings={"ignore_unknown_options": True})
@DIR_ARG
@PEER_OPT
@click.option("--undo", is_flag=True, help="Lift the rejections instead.")
@click.argument("tuples", nargs=-1, required=True, type=click.UNPROCESSED)
def reject_cmd(directory: str, peer: str, undo: bool, tuples: tuple[str, ...]) -> None:
    """Reject imported tuples at PEER (curation), as one batch; --undo lifts rejections.

    A rejection hides the tuple from the peer's instance, and so from everything derived from
    it, at every later exchange. Unlike `edit -R(...)`, the tuple need not be imported yet.

    \b
    Examples:
      selp cdss reject examples/cdss/bio --peer PBioSQL 'B(3, 2)'
      selp cdss reject examples/cdss/bio --peer PBioSQL --undo 'B(3, 2)'
    """
    from selp.cdss.edits import apply_batch, rejection_requests

    with open_store(directory) as s:
        requests = rejection_requests(s, peer, tuples, undo)
        _report_batch(peer, apply_batch(s, peer, requests, f"{'reject --undo' if undo else 'reject'} " + " ".join(tuples)))


@cdss.command(name="publish")
@DIR_ARG
@PEER_OPT
def publish_cmd(directory: str, peer: str) -> None:
    """Publish PEER's unpublished edits: the next exchanges of every peer see them.

    \b
    Example:
      selp cdss publish examples/cdss/bio --peer PGUS
    """
    with open_store(directory) as s:
        epoch, n = s.publish(peer)
        if not n:
            click.echo(f"{peer} has no unpublished edits; nothing published")
        else:
            click.echo(f"published {n} edit(s) of {peer} as publication {epoch}")


@cdss.command(name="exchange")
@DIR_ARG
@PEER_OPT
@engine_option()
@click.option("--strategy", type=click.Choice(["recompute", "provenance", "dred", "absorption", "adapt"]), default="recompute", show_default=True, help="Full recomputation, incremental maintenance (provenance-based deletion, DRed, or absorption provenance kept across exchanges), or adapting the instances to changed mappings (docs/adapt.md).")
@click.option("--publish", "publish_first", is_flag=True, help="Publish PEER's edits first (ORCHESTRA's exchange).")
@click.option("--wait", type=click.FloatRange(min=0), default=10.0, show_default=True, help="Seconds to wait for another running exchange.")
@click.option("--keep", type=click.IntRange(min=1), default=3, show_default=True, help="Epochs kept by garbage collection (besides those a peer reflects).")
@click.option("--master", default=None, help="Spark master URL (spark engine).")
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr.")
def exchange_cmd(directory: str, peer: str, engine: str | None, strategy: str, publish_first: bool, wait: float, keep: int, master: str | None, quiet: bool) -> None:
    """Update exchange for PEER: bring its instance up to date with everything published.

    \b
    Examples:
      selp cdss exchange examples/cdss/bio --peer PBioSQL
      selp cdss exchange examples/cdss/bio --peer PBioSQL --publish --strategy provenance
      selp cdss exchange examples/cdss/bio --peer PBioSQL --engine spark
    """
    from selp.cdss.exchange import exchange

    with open_store(directory) as s:
        eng = store_engine(engine, s, master)
        if strategy not in ("recompute", "adapt"):  # before starting Spark: refuse fast when unavailable
            from selp.engines.registry import get_engine

            get_engine(eng).check_strategy(strategy)
        if publish_first:
            epoch, n = s.publish(peer)
            if n and not quiet:
                click.echo(f"published {n} edit(s) of {peer} as publication {epoch}", err=True)
        spark = spark_for(eng, master, quiet)
        res = exchange(s, peer, eng, strategy, spark=spark, wait=wait, keep=keep, say=say_printer(quiet))
        info = res.info
        sizes = ", ".join(
            f"{s.cdss.display_name(ref)} {res.sizes[rel]}" for ref, rel in s.compiled.output_relations().items()
        )
        click.echo(f"{peer} now reflects publication {info.publication} (epoch {info.epoch}, {info.strategy}, {info.engine}): {sizes}")


@cdss.command(name="query")
@DIR_ARG
@PEER_OPT
@click.argument("relation")
@click.option("--with-nulls", is_flag=True, help="Keep tuples holding labeled nulls (default: certain answers only).")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@engine_option()
@click.option("--master", default=None, help="Spark master URL (spark engine; queries only).")
def query_cmd(directory: str, peer: str, relation: str, with_nulls: bool, fmt: str, engine: str | None, master: str | None) -> None:
    """Print RELATION in PEER's instance (as of its last exchange): certain answers by default.

    RELATION is a peer relation (B, or PBioSQL.B) or any relation of the compiled program
    (B_l, B_t, P_m4, ...; see `selp cdss compile`), or a query: one selp rule over them, whose
    certain answers are printed (labeled nulls join; answers holding one are dropped).

    \b
    Examples:
      selp cdss query examples/cdss/bio --peer PBioSQL B
      selp cdss query examples/cdss/bio --peer PuBio U --with-nulls --format csv
      selp cdss query examples/cdss/bio --peer PuBio 'ans(x, y) :- U(x, z), U(y, z)'
    """
    import csv as csvmod
    import io
    import json

    from selp.cdss.instance import read_peer_relation
    from selp.values import display_value, json_value

    from selp.cdss.instance import is_query, read_peer_query

    with open_store(directory) as s:
        if is_query(relation):
            eng = store_engine(engine, s, master)
            found = read_peer_query(s, peer, relation, eng, with_nulls, spark_for(eng, master, True))
        else:
            found = read_peer_relation(s, peer, relation, with_nulls)
    if found is None:
        raise SelpError(f"{peer} has no instance yet: run `selp cdss exchange {directory} --peer {peer}`")
    cols, ordered = found.columns, found.rows
    what = "with labeled nulls" if with_nulls else "certain answers"
    if fmt == "json":
        click.echo(json.dumps({
            "peer": peer, "relation": found.title, "epoch": found.epoch, "publication": found.publication,
            "with_nulls": with_nulls, "columns": cols,
            "rows": [[json_value(v) for v in r] for r in ordered],
        }, indent=2, ensure_ascii=False))
    elif fmt == "csv":
        buf = io.StringIO()
        w = csvmod.writer(buf, lineterminator="\n")
        w.writerow(cols)
        for r in ordered:
            w.writerow([display_value(v) for v in r])
        click.echo(buf.getvalue(), nl=False)
    else:
        click.echo(f"{found.title}({', '.join(cols)}) at {peer}: {len(ordered)} tuple(s), {what}; epoch {found.epoch}, publication {found.publication}")
        cells = [cols] + [[display_value(v) for v in r] for r in ordered]
        widths = [max(len(row[i]) for row in cells) for i in range(len(cols))]
        for row in cells:
            click.echo("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())


@cdss.command(name="status")
@DIR_ARG
def status_cmd(directory: str) -> None:
    """Peers (unpublished edits, the epoch their instance reflects), publications, epochs.

    \b
    Example:
      selp cdss status examples/cdss/bio
    """
    with open_store(directory) as s:
        last = s.last_publication()
        unpublished = s.unpublished_counts()
        epochs = s.peer_epochs()
        exchanges = {e.epoch: e for e in s.exchanges()}
        click.echo(f"store {s.root}: {len(s.cdss.peers)} peer(s), latest publication {last}, {len(exchanges)} exchange(s)")
        for p in s.cdss.peers:
            e = epochs.get(p.name)
            if e is None:
                state = "never exchanged"
            else:
                pub = exchanges[e].publication
                state = f"epoch {e} (publication {pub}{', up to date' if pub == last else f', {last - pub} publication(s) behind'})"
            click.echo(f"  {p.name}: {unpublished.get(p.name, 0)} unpublished edit(s); instance: {state}")
        for epoch, peer, created, n in s.publications():
            click.echo(f"  publication {epoch}: {n} edit(s) of {peer} at {_when(created)}")
        for e in exchanges.values():
            kept = "collected" if e.collected else "kept"
            click.echo(
                f"  epoch {e.epoch}: exchange of {e.peer} at {_when(e.created)}, publication {e.publication},"
                f" {e.strategy} on {e.engine}, {e.stats.get('tuples', '?')} tuple(s), {e.seconds:.2f}s ({kept})"
            )


@cdss.command(name="log")
@DIR_ARG
@click.option("--peer", default=None, help="Only this peer's edits.")
def log_cmd(directory: str, peer: str | None) -> None:
    """The edit log, in order: batches and their resolved edits.

    \b
    Example:
      selp cdss log examples/cdss/bio --peer PBioSQL
    """
    from selp.values import format_value

    with open_store(directory) as s:
        if peer is not None:
            s.check_peer(peer)
        batch = None
        for e in s.edits(peer=peer):
            if e.batch != batch:
                batch = e.batch
                pub = f"publication {e.published}" if e.published is not None else "unpublished"
                click.echo(f"batch {e.batch} of {e.peer} at {_when(e.created)} ({pub})")
            what = {("l", "+"): "insert", ("l", "-"): "delete", ("r", "+"): "reject", ("r", "-"): "lift rejection"}[(e.kind, e.op)]
            # a rejection is the deletion of an imported tuple: shown with the user's sign
            sign = "+" if (e.op == "+") == (e.kind == "l") else "-"
            click.echo(f"  {e.seq:>5} {sign}{e.relation}({', '.join(format_value(v) for v in e.values)})  {what}")


@cdss.command(name="explain")
@DIR_ARG
@PEER_OPT
@click.argument("fact")
@click.option("-k", "k", type=TREES_PER_FACT, default=3, show_default=True, help="Trees (1 to 2147483647).")
@click.option("--monoid", default="cost", show_default=True, help="cost (PEER's ranked trust), or another selp monoid (a plug-in: see --monoid-plugin).")
@monoid_plugin_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@engine_option("Top-k engine " + ENGINE_HELP[len("Engine "):])
@click.option("--master", default=None, help="Spark master URL (spark engine).")
def explain_cmd(directory: str, peer: str, fact: str, k: int, monoid: str, fmt: str, engine: str | None, master: str | None) -> None:
    """The k best derivation trees of FACT through the mappings, ranked by PEER's trust costs.

    Computed over the latest published base data; each step names its mapping and the peers
    the mapping reads.

    \b
    Example:
      selp cdss explain examples/cdss/bio --peer PBioSQL 'B(3, 2)' -k 3
    """
    from selp.cdss.explain import explain, render_text, to_json
    from selp.topk.trees import iter_json

    with open_store(directory) as s:
        engine = store_engine(engine, s, master)
        spark = spark_for(engine, master, False)
        e = explain(s, peer, fact, k, monoid, engine, spark)
        epoch = s.peer_epoch(peer)
        if epoch is not None and s.exchange(epoch).publication < e.publication:
            click.echo(f"note: {peer}'s instance reflects an older publication; run exchange to see these tuples there", err=True)
        if fmt == "json":
            for piece in iter_json(to_json(s, e), indent=2):
                click.echo(piece, nl=False)
            click.echo()
        else:
            click.echo(render_text(s, e), nl=False)


@cdss.command(name="trust")
@DIR_ARG
@PEER_OPT
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@engine_option("Engine of the cost fixpoint: reference in Python, any other in DuckDB (Spark's on the driver) " + ENGINE_HELP[len("Engine "):])
def trust_cmd(directory: str, peer: str, fmt: str, engine: str | None) -> None:
    """List PEER's imported tuples with their top-1 trust cost and the threshold verdict.

    The threshold of [peers.PEER.costs] is what exchange enforces: a tuple is within it when
    its cheapest derivation that PEER's Boolean trust conditions accept, over the tuples the
    peers accepted, costs at most the threshold (a distrusted derivation costs infinity, and so
    does one through a tuple another peer found above its own threshold).

    \b
    Example:
      selp cdss trust examples/cdss/bio --peer PBioSQL
    """
    import json

    from selp.cdss.trust_report import trust_report
    from selp.values import display_value, json_value

    with open_store(directory) as s:
        rep = trust_report(s, peer, store_engine(engine, s, None))
    if fmt == "json":
        out = dict(rep)
        out["tuples"] = [{**t, "args": [json_value(v) for v in t["args"]]} for t in rep["tuples"]]
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return
    num = lambda w: "-" if w is None else (str(int(w)) if float(w).is_integer() else f"{w:g}")  # noqa: E731
    limit = "no threshold" if rep["threshold"] is None else f"threshold {num(rep['threshold'])}"
    click.echo(f"{peer}: {len(rep['tuples'])} imported tuple(s), publication {rep['publication']}, {limit} (enforced by exchange)")
    for t in rep["tuples"]:
        fact = f"{t['relation']}({', '.join(display_value(v) for v in t['args'])})"
        if not t["trusted"]:
            verdict = "distrusted (Boolean trust)"
        elif t["within_threshold"]:
            verdict = "within threshold" if rep["threshold"] is not None else "trusted"
        else:
            verdict = "above threshold"
        extra = "  rejected by curation" if t["rejected"] else ""
        click.echo(f"  {fact:<24} cost {num(t['cost'])}  trusted cost {num(t['trusted_cost'])}  {verdict}{extra}")
