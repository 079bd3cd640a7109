"""``selp cdss delete``: delete tuples at a peer through the update policies of bidirectional
mappings ([Kar09] §5.3.2–5.3.3), saying what was deleted, what was kept back and why."""

from __future__ import annotations

import click

from selp.cli.cdss import DIR_ARG, PEER_OPT, cdss, engine_option, open_store, store_engine
from selp.cli.root import say_printer, spark_for


def _fact(store, ref, row) -> str:
    from selp.values import display_value

    return f"{store.cdss.display_name(ref)}({', '.join(display_value(v) for v in row)})"


def _listing(store, rows_by_ref, with_peer: bool = False) -> str:
    items = []
    for ref, rows in rows_by_ref.items():
        for row in sorted(rows, key=repr):
            items.append(_fact(store, ref, row) + (f" at {ref.peer}" if with_peer else ""))
    return ", ".join(items) if items else "none"


def _by_peer(store, rows_by_ref) -> str:
    peers: dict[str, list[str]] = {}
    for ref, rows in rows_by_ref.items():
        for row in sorted(rows, key=repr):
            peers.setdefault(ref.peer, []).append(_fact(store, ref, row))
    return "; ".join(f"{p}: {', '.join(fs)}" for p, fs in peers.items()) if peers else "none"


@cdss.command(name="delete", context_settings={"ignore_unknown_options": True})
@DIR_ARG
@PEER_OPT
@click.argument("tuples", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--avoid-side-effects", "avoid", multiple=True, metavar="PEER",
              help="Avoid side effects on PEER's relations (repeatable; default: the peers with side_effects = \"avoid\").")
@click.option("--tolerate-side-effects", "tolerate", is_flag=True, help="Tolerate side effects everywhere (PropagatePeerDeletions).")
@click.option("--dry-run", is_flag=True, help="Say what would happen; record nothing.")
@engine_option()
@click.option("--wait", type=click.FloatRange(min=0), default=10.0, show_default=True, help="Seconds to wait for another running exchange.")
@click.option("--master", default=None, help="Spark master URL (spark engine).")
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr.")
def delete_cmd(directory: str, peer: str, tuples: tuple[str, ...], avoid: tuple[str, ...], tolerate: bool,
               dry_run: bool, engine: str | None, wait: float, master: str | None, quiet: bool) -> None:
    """Delete TUPLES from PEER's instance through the update policies (`*` atoms of `<->`
    mappings): the policies delete, at the other side of each mapping, the starred tuples that
    derive them, to a fixpoint; the local contributions among those are deleted at their peers
    (published at once), and an exchange brings PEER up to date. Deletions that would delete
    more (side effects) at a peer that avoids them are kept back, and the command says why.

    \b
    Examples:
      selp cdss delete examples/cdss/policy --peer PT 'T(1, 1, 1)' 'T(3, 2, 3)'
      selp cdss delete examples/cdss/policy --peer PT 'T(1, 1, 1)' --avoid-side-effects PT --dry-run
    """
    from selp.cdss.edits import parse_edit
    from selp.cdss.errors import CdssError
    from selp.cdss.peer_deletion import delete_at_peer

    if tolerate and avoid:
        raise CdssError("--tolerate-side-effects and --avoid-side-effects exclude each other")
    with open_store(directory) as s:
        requested: dict = {}
        for t in tuples:
            req = parse_edit(s, peer, t, default_op="-")
            if req.op != "-":
                raise CdssError(f"{req.where}: delete takes tuples to delete, not insertions")
            requested.setdefault(req.relation.ref, set()).add(req.values)
        eng = store_engine(engine, s, master)
        spark = spark_for(eng, master, quiet)
        chosen = [] if tolerate else (list(avoid) if avoid else None)
        res = delete_at_peer(s, peer, requested, eng, avoid=chosen, dry_run=dry_run, spark=spark, wait=wait, say=say_printer(quiet))
        p = res.propagation
        mode = f"avoiding side effects at {', '.join(res.avoid)}" if res.avoid else "side effects tolerated"
        click.echo(f"delete at {peer}: {_listing(s, p.requested)} ({mode}{'; dry run' if dry_run else ''})")
        click.echo(f"  update policies delete: {_listing(s, p.policy)}")
        click.echo(f"  local data deleted: {_by_peer(s, p.applied)}")
        for ref, rows in p.kept_back.items():
            for row in sorted(rows, key=repr):
                why = p.reasons.get((ref, row))
                because = (
                    f"deleting it would also delete {', '.join(_fact(s, r, t) + ' at ' + r.peer for r, t in why)}"
                    if why else "it is in the lineage of a side effect at a peer that avoids them"
                )
                click.echo(f"  kept back: {_fact(s, ref, row)} of {ref.peer}: {because}")
        click.echo(f"  side effects: {_listing(s, p.side_effects, with_peer=True)}")
        if any(p.not_performed.values()):
            click.echo(f"  not performed: {_listing(s, p.not_performed)} (a deletion that derives it was kept back)")
        for who, epoch, n in res.publications:
            click.echo(f"  published {n} deletion(s) of {who} as publication {epoch}")
        if res.exchanged is not None:
            info = res.exchanged.info
            sizes = ", ".join(
                f"{s.cdss.display_name(ref)} {res.exchanged.sizes[rel]}" for ref, rel in s.compiled.output_relations().items()
            )
            click.echo(f"{peer} now reflects publication {info.publication} (epoch {info.epoch}, {info.strategy}, {info.engine}): {sizes}")
