"""A deletion at a peer other than the tuples' origin, over the durable store ([Kar09] §5.3.2):
the update policies' local deletions (:mod:`selp.cdss.policy`) are recorded and published as
batches of the peers that own them, then an exchange brings the requesting peer up to date.

Order and failure: the policies run over the latest exchange epoch, which must reflect the latest
publication (else the user is asked to exchange first: the policies read a consistent state).
Every peer's batch is recorded and published in **one** SQLite transaction, and the exchange
that follows is an ordinary one (its own epoch switch): a crash before the transaction commits
changes nothing; a crash after it leaves the previous epoch readable and the deletions published,
so the next exchange (by any peer) reaches the state the propagation computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from selp.cdss.errors import CdssError
from selp.cdss.exchange import ExchangeResult, exchange
from selp.cdss.model import RelationRef
from selp.cdss.policy import Propagation, Row, avoiding_peers, propagate_peer_deletions
from selp.cdss.store import Store
from selp.values import format_value

Say = Callable[[str], None]


@dataclass
class PeerDeletion:
    """What :func:`delete_at_peer` did: the propagation, the publications it made and the
    exchange that applied them (None for a dry run or when nothing is deleted locally)."""

    propagation: Propagation
    avoid: list[str]
    publications: list[tuple[str, int, int]]
    exchanged: ExchangeResult | None


def current_state(store: Store, peer: str) -> dict[str, set[Row]]:
    """Every relation of the latest exchange epoch, refused unless ``peer`` reflects it and it
    reflects the latest publication (the policies must read a consistent, current state)."""
    last = store.last_exchange()
    publication = store.last_publication()
    epoch = store.peer_epoch(peer)
    if last is None or epoch != last.epoch or last.publication != publication:
        seen = "never exchanged" if epoch is None else f"reflects epoch {epoch}"
        raise CdssError(
            f"{peer}'s instance is not current ({seen}; latest publication {publication}): run"
            f" `selp cdss exchange {store.directory} --peer {peer}` first"
        )
    return store.read_epoch(last.epoch)


def delete_at_peer(
    store: Store,
    peer: str,
    requested: dict[RelationRef, set[Row]],
    engine: str,
    *,
    avoid: Iterable[str] | None = None,
    dry_run: bool = False,
    spark: Any = None,
    wait: float = 10.0,
    keep: int = 3,
    say: Say = lambda msg: None,
) -> PeerDeletion:
    """Delete ``requested`` (tuples of ``peer``'s own relations, in its instance) through the
    update policies; ``avoid``: the peers that avoid side effects (default: the peers whose
    ``side_effects = "avoid"``)."""
    for ref in requested:
        if ref.peer != peer:
            raise CdssError(f"{peer} can delete only from its own relations, not {ref}")
    state = current_state(store, peer)
    chosen = avoiding_peers(store.compiled) if avoid is None else list(avoid)
    for p in chosen:
        store.check_peer(p)
    prop = propagate_peer_deletions(store.compiled, state, requested, engine, avoid=chosen, spark=spark)
    if dry_run or not any(prop.applied.values()):
        return PeerDeletion(prop, chosen, [], None)
    by_peer: dict[str, list[tuple[str, Row]]] = {}
    for ref, rows in prop.applied.items():
        for row in sorted(rows, key=repr):
            by_peer.setdefault(ref.peer, []).append((ref.name, row))
    asked = ", ".join(
        f"{ref.name}({', '.join(format_value(v) for v in row)})" for ref, rows in requested.items() for row in sorted(rows, key=repr)
    )
    pubs = store.publish_deletions(by_peer, f"update policy: delete {asked} at {peer}")
    res = exchange(store, peer, engine, "recompute", spark=spark, wait=wait, keep=keep, say=say)
    return PeerDeletion(prop, chosen, pubs, res)
