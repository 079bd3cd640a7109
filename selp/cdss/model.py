"""The CDSS model: peers, their relations, schema mappings (tgds) and trust policies.

A *collaborative data sharing system* (Karvounarakis' dissertation [Kar09], chapter 3; docs/references.md) is a set of peers,
each owning a relational schema, related by schema mappings, i.e. tuple-generating dependencies
``body -> exists z. head`` whose atoms may name relations of any peer. Every peer also states how
far it trusts what the mappings import (:class:`TrustPolicy`).

The classes here are plain immutable values with no behaviour beyond look-ups, so that the later
layers (the durable store, update exchange, ProQL) can build on them without depending on how a
CDSS was loaded (:mod:`selp.cdss.config` reads ``cdss.toml``) or compiled
(:mod:`selp.cdss.compile`). Terms of mapping atoms reuse selp's own :class:`~selp.language.ast.Var`
and :class:`~selp.language.ast.Const`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Union

from selp.errors import Location
from selp.language.ast import Const, Var

ATTRIBUTE_TYPES = ("str", "int")
NOWHERE = Location()


@dataclass(frozen=True)
class Attribute:
    """A typed attribute of a peer relation."""

    name: str
    type: str  # "str" or "int"


@dataclass(frozen=True)
class RelationRef:
    """A relation named by its peer and its name (``PGUS.G``)."""

    peer: str
    name: str

    def __str__(self) -> str:
        return f"{self.peer}.{self.name}"


@dataclass(frozen=True)
class Relation:
    """A relation of a peer's schema, with its key (a list of attribute names)."""

    peer: str
    name: str
    attributes: tuple[Attribute, ...]
    key: tuple[str, ...]
    loc: Location = field(default=NOWHERE, compare=False, repr=False)

    @property
    def ref(self) -> RelationRef:
        return RelationRef(self.peer, self.name)

    @property
    def arity(self) -> int:
        return len(self.attributes)

    @property
    def attribute_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(a.type for a in self.attributes)

    def position(self, attribute: str) -> int:
        """0-based position of an attribute; ``ValueError`` if the relation has none of that name."""
        return self.attribute_names.index(attribute)


MappingTerm = Union[Var, Const]


@dataclass(frozen=True)
class MappingAtom:
    """``R(t1, ..., tn)`` in a mapping, ``R`` resolved to a peer relation; terms are variables or
    constants (no Skolem terms: existentials are plain variables declared by ``exists``)."""

    relation: RelationRef
    args: tuple[MappingTerm, ...]
    loc: Location = field(default=NOWHERE, compare=False, repr=False)

    def vars(self) -> Iterator[Var]:
        for a in self.args:
            if isinstance(a, Var):
                yield a


def _ordered_vars(atoms: tuple[MappingAtom, ...]) -> tuple[Var, ...]:
    seen: dict[Var, None] = {}
    for a in atoms:
        for v in a.vars():
            seen.setdefault(v, None)
    return tuple(seen)


def forward_name(pair: str) -> str:
    """The name of the left-to-right tgd of bidirectional mapping ``pair`` (m2 -> ``m2_fwd``)."""
    return f"{pair}_fwd"


def backward_name(pair: str) -> str:
    """The name of the right-to-left tgd of bidirectional mapping ``pair`` (m2 -> ``m2_bwd``)."""
    return f"{pair}_bwd"


@dataclass(frozen=True)
class Mapping:
    """A tgd ``name: body -> exists z1, ..., zk. head`` (both sides conjunctions of atoms)."""

    name: str
    body: tuple[MappingAtom, ...]
    head: tuple[MappingAtom, ...]
    existentials: tuple[Var, ...] = ()
    text: str = field(default="", compare=False)  # as written, for comments and messages
    loc: Location = field(default=NOWHERE, compare=False, repr=False)
    # one direction of a bidirectional mapping ([Kar09] §5.3): the `<->` mapping's name, and which
    # head atoms are starred (deleting a body tuple deletes the starred head tuples it matches)
    pair: str = ""
    head_policy: tuple[bool, ...] = ()
    # the tgd's version in a store: 1 until the mapping is edited, then one more per edit, so
    # that an edited tgd's Skolem functions get fresh names (selp.cdss.store.tgd_versions)
    version: int = 1

    @property
    def direction(self) -> str:
        """``"->"`` for the left-to-right tgd of a ``<->`` mapping, ``"<-"`` for the other, else ``""``."""
        if not self.pair:
            return ""
        return "->" if self.name == forward_name(self.pair) else "<-"

    @property
    def body_vars(self) -> tuple[Var, ...]:
        """Distinct body variables in order of first occurrence (the columns of ``P_m``)."""
        return _ordered_vars(self.body)

    @property
    def head_vars(self) -> tuple[Var, ...]:
        return _ordered_vars(self.head)

    @property
    def frontier(self) -> tuple[Var, ...]:
        """Variables shared by body and head, in body order: the Skolem functions' arguments."""
        head = set(self.head_vars)
        return tuple(v for v in self.body_vars if v in head)

    @property
    def source_relations(self) -> tuple[RelationRef, ...]:
        return tuple(dict.fromkeys(a.relation for a in self.body))

    @property
    def target_relations(self) -> tuple[RelationRef, ...]:
        return tuple(dict.fromkeys(a.relation for a in self.head))

    @property
    def source_peers(self) -> tuple[str, ...]:
        """Peers whose relations the body reads: where the mapping's data "comes from"."""
        return tuple(dict.fromkeys(r.peer for r in self.source_relations))


@dataclass(frozen=True)
class AttributeRef:
    """An attribute of the relation a trust condition is about, used in its ``when`` clause."""

    name: str


ConditionTerm = Union[AttributeRef, Const]
COMPARISON_OPS = ("=", "!=", "<", "<=", ">", ">=")


@dataclass(frozen=True)
class Condition:
    """``left OP right`` over attributes of the relation and constants."""

    op: str
    left: ConditionTerm
    right: ConditionTerm


@dataclass(frozen=True)
class TrustRule:
    """One trust condition of a peer: *trust* or *distrust* the imported tuples of ``relation``
    (every relation of the peer when ``None``) that a derivation step produces through one of
    ``mappings`` (any mapping when empty) whose body reads a relation of one of ``sources`` (any
    peer when empty), when all comparisons of ``when`` hold (always when empty).

    The semantics (see :mod:`selp.cdss.compile`): a derivation step of an imported tuple is
    trusted when the peer trusts by default or some *trust* rule matches, and no *distrust* rule
    matches; a tuple is trusted when some step producing it is.
    """

    action: str  # "trust" or "distrust"
    relation: str | None = None
    sources: tuple[str, ...] = ()
    mappings: tuple[str, ...] = ()
    when: tuple[Condition, ...] = ()
    when_text: str = field(default="", compare=False)
    loc: Location = field(default=NOWHERE, compare=False, repr=False)


@dataclass(frozen=True)
class RankedTrust:
    """Ranked trust in the tropical semiring (min, +): a cost per source peer's local data and
    a *mapping function* per mapping, ``f_m(x) = scale * x + cost`` applied to the sum of the
    costs of a step's body tuples ([Kar09] §4.8, Example 9's ``f_m4(x) = 2x``); a tuple costs
    its cheapest derivation, and a peer accepts tuples costing at most ``threshold``."""

    peer_costs: tuple[tuple[str, float], ...] = ()
    mapping_costs: tuple[tuple[str, float], ...] = ()  # the additive part ``cost``
    threshold: float | None = None
    mapping_scales: tuple[tuple[str, float], ...] = ()  # the factor ``scale`` (unlisted: 1)

    def peer_cost(self, peer: str) -> float | None:
        """The cost of ``peer``'s local data (None: unlisted)."""
        return dict(self.peer_costs).get(peer)

    def mapping_cost(self, mapping: str) -> float | None:
        """The additive part of ``mapping``'s function (None: unlisted)."""
        return dict(self.mapping_costs).get(mapping)

    def mapping_scale(self, mapping: str) -> float:
        """The factor of ``mapping``'s function (1 unless written ``"Kx"``)."""
        return dict(self.mapping_scales).get(mapping, 1)


TRUST_DEFAULTS = ("trust", "distrust")


@dataclass(frozen=True)
class TrustPolicy:
    """What a peer accepts from update exchange: Boolean conditions and ranked costs."""

    default: str = "trust"
    rules: tuple[TrustRule, ...] = ()
    ranked: RankedTrust | None = None

    def rules_for(self, relation: str) -> tuple[TrustRule, ...]:
        """The rules that apply to one of the peer's relations."""
        return tuple(r for r in self.rules if r.relation in (None, relation))


@dataclass(frozen=True)
class Peer:
    """A peer: its relations and its trust policy."""

    name: str
    relations: tuple[Relation, ...]
    policy: TrustPolicy = TrustPolicy()
    description: str = ""
    loc: Location = field(default=NOWHERE, compare=False, repr=False)
    # deleting at another peer through update policies: "tolerate" side effects on this peer's
    # relations, or "avoid" them by keeping back the deletions that cause them ([Kar09] §5.3.3)
    side_effects: str = "tolerate"

    def relation(self, name: str) -> Relation:
        for r in self.relations:
            if r.name == name:
                return r
        raise KeyError(name)


@dataclass(frozen=True)
class CDSS:
    """Peers and the mappings between them (checked by :func:`selp.cdss.config.load_cdss`)."""

    peers: tuple[Peer, ...]
    mappings: tuple[Mapping, ...]
    name: str = ""
    source: str | None = field(default=None, compare=False)  # the cdss.toml path, for messages

    def peer(self, name: str) -> Peer:
        for p in self.peers:
            if p.name == name:
                return p
        raise KeyError(name)

    def relation(self, ref: RelationRef) -> Relation:
        return self.peer(ref.peer).relation(ref.name)

    def relations(self) -> tuple[Relation, ...]:
        """Every relation of every peer, peers in order."""
        return tuple(r for p in self.peers for r in p.relations)

    def mapping(self, name: str) -> Mapping:
        for m in self.mappings:
            if m.name == name:
                return m
        raise KeyError(name)

    def mapping_names(self, name: str) -> tuple[str, ...]:
        """The tgds a name in a policy stands for: both directions of a ``<->`` mapping, else itself."""
        pair = tuple(m.name for m in self.mappings if m.pair == name)
        return pair or (name,)

    @property
    def bidirectional(self) -> bool:
        return any(m.pair for m in self.mappings)

    def display_name(self, ref: RelationRef) -> str:
        """``G`` when no other peer has a relation of that name, else ``PGUS.G``."""
        if sum(1 for r in self.relations() if r.name == ref.name) > 1:
            return str(ref)
        return ref.name

    def find_relation(self, text: str, what: str = "--relation") -> RelationRef:
        """The relation ``text`` names: ``PEER.R``, or ``R`` when only one peer has a relation
        of that name. Else a :class:`~selp.cdss.errors.CdssError` that starts with ``what`` (the
        option that gave ``text``) and lists the relations, or the candidates."""
        from selp.cdss.errors import CdssError

        if "." in text:
            peer, _, name = text.partition(".")
            if any(r.ref == RelationRef(peer, name) for r in self.relations()):
                return RelationRef(peer, name)
            raise CdssError(f"{what} {text}: no such relation")
        found = [r.ref for r in self.relations() if r.name == text]
        if len(found) == 1:
            return found[0]
        if not found:
            known = ", ".join(self.display_name(r.ref) for r in self.relations())
            raise CdssError(f"{what} {text}: no such relation (relations: {known})")
        raise CdssError(f"{what} {text} is ambiguous: {', '.join(str(r) for r in found)}")
