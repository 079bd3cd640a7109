"""The provenance graph of a CDSS state, read from the store ([Kar09] ch. 4: the provenance graph and its relational encoding).

**Tuple nodes** are the peer tuples of an epoch: every row of ``R_o`` (the instance), ``R_l``
(local contributions) and ``R_i`` (every import, trusted or not), keyed by the relation's base
name and values. A tuple in ``R_l`` is *local*: it carries its own provenance token (the tuple's
text, ``B(3,5)``), an alternative to its derivations (``Pv(U(2,5)) = U(2,5) + m2(G(3,5,2))``).

**Mapping nodes** are the rows of ``P_m``: substituting a row into ``m``'s body atoms gives the
node's inputs, into its head atoms (existential variables as the Skolem values
``f_m_z(frontier)``, exactly as :mod:`selp.cdss.compile` makes them) its outputs. ``P_m`` reads
``S_o``, so only tuples of the instance feed mappings; a distrusted or rejected import is a tuple
node with its derivation but feeds nothing further, as in the stored state.

The graph is held in memory as adjacency maps (:class:`ProvenanceGraph`); the evaluator uses only
its methods (``derivations``, ``consumers``, ``tuples_of``), so a Spark- or SQL-backed graph with
the same methods is a drop-in replacement.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from selp.cdss.compile import CompiledCDSS
from selp.cdss.model import Mapping
from selp.cdss.store import Row, Store
from selp.errors import SelpError
from selp.language.ast import Const, Var
from selp.values import Skolem, Value, format_value


@dataclass(frozen=True)
class TupleNode:
    relation: str  # base name (B, or PBioSQL_B)
    values: Row

    def __str__(self) -> str:
        return f"{self.relation}({','.join(format_value(v) for v in self.values)})"


@dataclass(frozen=True)
class MappingNode:
    mapping: str
    values: Row  # the P_m row: m's body variables in order

    def __str__(self) -> str:
        return f"{self.mapping}({','.join(format_value(v) for v in self.values)})"


Node = TupleNode | MappingNode


@dataclass
class ProvenanceGraph:
    """Tuple and mapping nodes with their edges (see the module docstring)."""

    attributes: dict[str, tuple[str, ...]]  # base relation name -> attribute names
    mappings: dict[str, Mapping]
    targets: dict[str, set[str]]  # mapping -> base names of its head relations
    sources: dict[str, set[str]]  # mapping -> base names of its body relations
    tuples: dict[str, set[TupleNode]] = field(default_factory=lambda: defaultdict(set))
    local: set[TupleNode] = field(default_factory=set)
    inputs: dict[MappingNode, tuple[TupleNode, ...]] = field(default_factory=dict)
    outputs: dict[MappingNode, tuple[TupleNode, ...]] = field(default_factory=dict)
    derived_by: dict[TupleNode, list[MappingNode]] = field(default_factory=lambda: defaultdict(list))
    used_by: dict[TupleNode, list[MappingNode]] = field(default_factory=lambda: defaultdict(list))

    def tuples_of(self, relation: str | None) -> set[TupleNode]:
        """The tuple nodes of a relation (every tuple node when ``relation`` is None)."""
        if relation is None:
            return set().union(*self.tuples.values()) if self.tuples else set()
        return self.tuples.get(relation, set())

    def derivations(self, t: TupleNode) -> list[MappingNode]:
        """The mapping nodes with ``t`` among their outputs."""
        return self.derived_by.get(t, [])

    def consumers(self, t: TupleNode) -> list[MappingNode]:
        """The mapping nodes with ``t`` among their inputs."""
        return self.used_by.get(t, [])

    def attribute(self, t: TupleNode, name: str) -> tuple[bool, Value | None]:
        """(True, value) when ``t``'s relation has attribute ``name``, else (False, None)."""
        attrs = self.attributes.get(t.relation, ())
        if name in attrs:
            return True, t.values[attrs.index(name)]
        return False, None

    def add_tuple(self, t: TupleNode) -> None:
        self.tuples[t.relation].add(t)


def _instantiate(m: Mapping, row: Row, names, compiled: CompiledCDSS, atoms) -> tuple[TupleNode, ...]:
    env: dict[Var, Value] = dict(zip(m.body_vars, row))
    frontier = tuple(env[v] for v in m.frontier)
    for z in m.existentials:
        env[z] = Skolem(names.skolem(m.name, z), frontier)
    out = []
    for a in atoms:
        vals = tuple(env[t] if isinstance(t, Var) else t.value if isinstance(t, Const) else t for t in a.args)
        out.append(TupleNode(names.base(a.relation), vals))
    return tuple(out)


def build_graph(compiled: CompiledCDSS, relations: dict[str, set[Row]]) -> ProvenanceGraph:
    """The provenance graph of one state: ``relations`` maps compiled relation names (``B_o``,
    ``P_m1``, ...) to rows, as :meth:`Store.read_epoch` returns them."""
    cdss, names = compiled.cdss, compiled.names
    g = ProvenanceGraph(
        attributes={names.base(r.ref): r.attribute_names for r in cdss.relations()},
        mappings={m.name: m for m in cdss.mappings},
        targets={m.name: {names.base(a.relation) for a in m.head} for m in cdss.mappings},
        sources={m.name: {names.base(a.relation) for a in m.body} for m in cdss.mappings},
    )
    for r in cdss.relations():
        base = names.base(r.ref)
        for kind in ("o", "l", "i"):
            for row in relations.get(names.relation(r.ref, kind), ()):
                t = TupleNode(base, row)
                g.add_tuple(t)
                if kind == "l":
                    g.local.add(t)
    for m in cdss.mappings:
        for row in relations.get(names.provenance(m.name), ()):
            node = MappingNode(m.name, row)
            ins = _instantiate(m, row, names, compiled, m.body)
            outs = _instantiate(m, row, names, compiled, m.head)
            g.inputs[node], g.outputs[node] = ins, outs
            for t in dict.fromkeys(ins):
                g.add_tuple(t)
                g.used_by[t].append(node)
            for t in dict.fromkeys(outs):
                g.add_tuple(t)
                g.derived_by[t].append(node)
    return g


def query_epoch(store: Store, peer: str | None = None) -> int:
    """The epoch a query reads: the one ``peer``'s instance reflects (default: the latest
    exchange); a clear error when there is none yet."""
    if peer is not None:
        epoch = store.peer_epoch(peer)
        if epoch is None:
            raise SelpError(f"peer {peer} has no exchanged instance yet; run `selp cdss exchange {store.directory} --peer {peer}`")
        return epoch
    last = store.last_exchange()
    if last is None:
        raise SelpError(f"no exchange in {store.directory} yet; run `selp cdss exchange {store.directory} --peer P`")
    return last.epoch


def load_graph(store: Store, peer: str | None = None) -> tuple[ProvenanceGraph, int]:
    """The graph of the epoch ``peer``'s instance reflects (default: the latest exchange)."""
    epoch = query_epoch(store, peer)
    compiled = store.compiled
    wanted = [names for names in store.relation_names() if names.endswith(("_o", "_l", "_i")) or names.startswith("P_")]
    return build_graph(compiled, store.read_epoch(epoch, wanted)), epoch
