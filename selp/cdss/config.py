"""Load a CDSS directory's ``cdss.toml`` into the model (:mod:`selp.cdss.model`) and check it.

The file (the bundled ``examples/cdss/bio/cdss.toml`` is a commented example)::

    name = "bio"                                  # optional
    mappings = [                                  # one tgd per string (see mapping_parser)
      "m1: G(i, c, n) -> B(i, n)",
      'm5: G(i, "x", n) -> B(i, n)',              # TOML literal strings spare escaping quotes
    ]

    [peers.PGUS]                                  # a peer; its name is an identifier
    description = "..."                           # optional
    trust_default = "trust"                       # optional: "trust" (default) or "distrust"

    [peers.PGUS.relations.G]                      # a relation of the peer
    attributes = ["id: int", "can: int", "nam: int"]
    key = ["id"]                                  # optional; default: every attribute

    [[peers.PBioSQL.trust]]                       # a trust condition (any number, any order)
    action = "distrust"                           # or "trust"
    relation = "B"                                # optional: one of the peer's relations
    from = ["PGUS"]                               # optional: source peers
    mappings = ["m4"]                             # optional: mapping names
    when = "nam >= 3"                             # optional: comparisons joined by `and`

    # or, instead of [costs]: trust_only_from = ["PGUS"] under [peers.PBioSQL] (ancestry:
    # some derivation's every leaf from these peers or PBioSQL itself)
    [peers.PBioSQL.costs]                         # optional ranked trust (tropical semiring)
    peers = { PBioSQL = 0, PuBio = 1, PGUS = 5 }  # cost of each peer's local data
    mappings = { m4 = 2 }                         # cost added by a step through a mapping,
                                                  # or its function: m4 = "2x" (or "2x + 1")
    threshold = 10                                # accept tuples costing at most this

Every mistake is a :class:`~selp.cdss.errors.CdssError` located in ``cdss.toml``: TOML syntax
errors where ``tomllib`` reports them, other mistakes at the offending key or value (found by
:class:`~selp.cdss.toml_locate.TomlLocator`), mapping and condition errors at the offending
character inside the string. Checks: unknown keys, names, types, keys naming unknown attributes,
duplicates, mapping relations (unknown, ambiguous, arity), mapping variables (an existential
variable also in the body or unused in the head, a head variable neither in the body nor
existential, a variable or constant whose positions disagree on the type), trust conditions
(unknown relation, peer, mapping or attribute, ill-typed comparison, bad cost), and weak
acyclicity (:mod:`selp.cdss.acyclicity`).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

from selp.cdss.errors import CdssError
from selp.cdss.mapping_parser import ParsedAtom, ParsedMapping, parse_condition, parse_mapping
from selp.cdss.model import (
    ATTRIBUTE_TYPES,
    CDSS,
    TRUST_DEFAULTS,
    Attribute,
    AttributeRef,
    Condition,
    Mapping,
    MappingAtom,
    backward_name,
    forward_name,
    Peer,
    RankedTrust,
    Relation,
    TrustPolicy,
    TrustRule,
)
from selp.cdss.toml_locate import TomlLocator
from selp.errors import Location, not_utf8
from selp.language.ast import Const, Var

CONFIG_FILE = "cdss.toml"
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_ATTRIBUTE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(\S+)\s*\Z")
_TOML_POS = re.compile(r"\(at line (\d+), column (\d+)\)")
# words that cannot name an attribute or a variable: selp's `not`, the mapping grammar's keywords
RESERVED = ("not", "exists", "and")


def load_cdss(directory: str | Path, check_acyclic: bool = True) -> CDSS:
    """Read ``DIRECTORY/cdss.toml`` (or the ``.toml`` file given) and check it."""
    d = Path(directory)
    path = d if d.suffix == ".toml" else d / CONFIG_FILE
    if not path.exists():
        where = "" if d.suffix == ".toml" else f" (a CDSS directory holds a {CONFIG_FILE})"
        raise CdssError(f"{path} not found{where}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise CdssError(not_utf8(path), Location(str(path))) from None
    except OSError as err:
        raise CdssError(f"cannot read {path}: {err.strerror}") from None
    return parse_cdss(text, str(path), check_acyclic)


def parse_cdss(text: str, file: str | None = CONFIG_FILE, check_acyclic: bool = True) -> CDSS:
    """Build and check a CDSS from the text of a ``cdss.toml``."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        msg = str(err)
        m = _TOML_POS.search(msg)
        loc = Location(file, int(m.group(1)), int(m.group(2))) if m else Location(file)
        raise CdssError(f"TOML syntax error: {_TOML_POS.sub('', msg).strip()}", loc) from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise CdssError("TOML syntax error: too deeply nested", Location(file)) from None
    cdss = _Loader(TomlLocator(text, file), file).load(doc)
    if check_acyclic:
        from selp.cdss.acyclicity import check_weakly_acyclic

        check_weakly_acyclic(cdss)
    return cdss


def _show_type(v: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
            dict: "a table"}.get(type(v), type(v).__name__)


class _Loader:
    def __init__(self, where: TomlLocator, file: str | None) -> None:
        self.where = where
        self.file = file

    # -- generic checks --------------------------------------------------------------------
    def fail(self, message: str, path: tuple, key: bool = False) -> CdssError:
        return CdssError(message, self.where.key(path) if key else self.where.value(path))

    def expect(self, value: Any, kind: type | tuple, path: tuple, what: str) -> Any:
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            raise self.fail(f"{_dotted(path)} must be {what}, not {_show_type(value)}", path)
        return value

    def known_keys(self, table: dict, allowed: tuple[str, ...], path: tuple) -> None:
        for k in table:
            if k not in allowed:
                where = _dotted(path) or "the top level"
                raise self.fail(
                    f"unknown key {k!r} in {where} (expected {', '.join(allowed)})", path + (k,), key=True
                )

    def ident(self, name: str, path: tuple, what: str, key: bool = True) -> str:
        if not _IDENT.match(name):
            raise self.fail(
                f"{what} name {name!r} is not an identifier (letters, digits and _, starting with a letter)",
                path, key=key,
            )
        return name

    def string_list(self, value: Any, path: tuple, what: str) -> list[str]:
        self.expect(value, list, path, f"an array of {what}")
        for i, v in enumerate(value):
            self.expect(v, str, path + (i,), f"a string ({what})")
        return value

    # -- the document ----------------------------------------------------------------------
    def load(self, doc: dict) -> CDSS:
        self.known_keys(doc, ("name", "description", "mappings", "peers"), ())
        name = self.expect(doc.get("name", ""), str, ("name",), "a string")
        self.expect(doc.get("description", ""), str, ("description",), "a string")
        if "peers" not in doc:
            raise CdssError("no peers: add a [peers.NAME] table", Location(self.file, 1))
        peers_t = self.expect(doc["peers"], dict, ("peers",), "a table of peers")
        peers = [self.peer(pname, pt) for pname, pt in peers_t.items()]
        self.peer_names = {p.name for p in peers}
        self.relations = {(r.peer, r.name): r for p in peers for r in p.relations}
        mappings = self.mappings(doc.get("mappings", []))
        self.mapping_names = {m.name for m in mappings}
        peers = [
            Peer(p.name, p.relations, self.policy(p, peers_t[p.name]), p.description, p.loc, p.side_effects)
            for p in peers
        ]
        return CDSS(tuple(peers), tuple(mappings), name, self.file)

    def peer(self, name: str, table: Any) -> Peer:
        path = ("peers", name)
        self.ident(name, path, "peer")
        self.expect(table, dict, path, "a table")
        self.known_keys(table, ("description", "relations", "trust", "trust_default", "trust_only_from", "costs", "side_effects"), path)
        desc = self.expect(table.get("description", ""), str, path + ("description",), "a string")
        side_effects = table.get("side_effects", "tolerate")
        if side_effects not in ("tolerate", "avoid"):
            raise self.fail(
                f"side_effects must be \"tolerate\" or \"avoid\", not {side_effects!r}", path + ("side_effects",)
            )
        rels_t = self.expect(table.get("relations", {}), dict, path + ("relations",), "a table of relations")
        relations = tuple(self.relation(name, rname, rt) for rname, rt in rels_t.items())
        return Peer(name, relations, TrustPolicy(), desc, self.where.key(path), side_effects)

    def relation(self, peer: str, name: str, table: Any) -> Relation:
        path = ("peers", peer, "relations", name)
        self.ident(name, path, "relation")
        self.expect(table, dict, path, "a table with attributes and key")
        self.known_keys(table, ("attributes", "key"), path)
        if "attributes" not in table:
            raise self.fail(f"relation {peer}.{name} has no attributes (attributes = [\"id: int\", ...])", path, key=True)
        apath = path + ("attributes",)
        specs = self.string_list(table["attributes"], apath, "attributes like \"id: int\"")
        if not specs:
            raise self.fail(f"relation {peer}.{name} has no attributes", apath)
        attrs: list[Attribute] = []
        for i, spec in enumerate(specs):
            m = _ATTRIBUTE.match(spec)
            if not m:
                raise self.fail(f"attribute {spec!r} must be written \"NAME: TYPE\" (TYPE str or int)", apath + (i,))
            aname, atype = m.groups()
            if aname in RESERVED:
                raise self.fail(f"attribute name {aname!r} is a reserved word", apath + (i,))
            if atype not in ATTRIBUTE_TYPES:
                raise self.fail(f"attribute {aname} has unknown type {atype!r}; use str or int", apath + (i,))
            if any(a.name == aname for a in attrs):
                raise self.fail(f"attribute {aname} appears twice in {peer}.{name}", apath + (i,))
            attrs.append(Attribute(aname, atype))
        names = [a.name for a in attrs]
        kpath = path + ("key",)
        key = self.string_list(table.get("key", names), kpath, "attribute names")
        if not key:
            raise self.fail(f"the key of {peer}.{name} is empty; omit it to use every attribute", kpath)
        for i, k in enumerate(key):
            if k not in names:
                raise self.fail(
                    f"key attribute {k!r} is not an attribute of {peer}.{name} ({', '.join(names)})", kpath + (i,)
                )
            if key.index(k) != i:
                raise self.fail(f"key attribute {k} appears twice", kpath + (i,))
        return Relation(peer, name, tuple(attrs), tuple(key), self.where.key(path))

    # -- mappings --------------------------------------------------------------------------
    def mappings(self, value: Any) -> list[Mapping]:
        texts = self.string_list(value, ("mappings",), "mappings like \"m1: G(i, c, n) -> B(i, n)\"")
        out: list[Mapping] = []
        self.pairs: dict[str, tuple[str, ...]] = {}
        for i, text in enumerate(texts):
            pm = parse_mapping(text, self.where.string(("mappings", i)))
            if pm.bidirectional:
                tgds = self.bidirectional(pm)
                self.pairs[pm.name] = tuple(m.name for m in tgds)
            else:
                tgds = [self.mapping(pm)]
            for m in tgds:
                for prev in out:
                    if prev.name == m.name or prev.pair == m.name or (m.pair and prev.name == m.pair):
                        raise CdssError(f"mapping name {m.name} is used twice (first at {prev.loc})", m.loc)
                out.append(m)
        return out

    def bidirectional(self, pm: ParsedMapping) -> list[Mapping]:
        """The pair of tgds a ``<->`` mapping is equivalent to ([Kar09] §5.3.1)."""
        if not _IDENT.match(pm.name):
            raise CdssError(f"mapping name {pm.name!r} must start with a letter", pm.loc)
        names = (forward_name(pm.name), backward_name(pm.name))
        fwd = self.mapping(
            replace(pm, name=names[0], bidirectional=False, body_existentials=()), pair=pm.name,
            policy=tuple(a.starred for a in pm.head),
        )
        bwd = self.mapping(
            replace(pm, name=names[1], body=pm.head, head=pm.body, existentials=pm.body_existentials,
                    body_existentials=(), bidirectional=False),
            pair=pm.name, policy=tuple(a.starred for a in pm.body),
        )
        return [fwd, bwd]

    def resolve(self, atom: ParsedAtom, mapping: str) -> Relation:
        if atom.peer is not None:
            if (atom.peer, atom.relation) in self.relations:
                return self.relations[(atom.peer, atom.relation)]
            if atom.peer not in self.peer_names:
                raise CdssError(f"mapping {mapping}: unknown peer {atom.peer}", atom.loc)
            raise CdssError(f"mapping {mapping}: peer {atom.peer} has no relation {atom.relation}", atom.loc)
        found = [r for (p, n), r in self.relations.items() if n == atom.relation]
        if not found:
            raise CdssError(f"mapping {mapping}: unknown relation {atom.relation}", atom.loc)
        if len(found) > 1:
            options = ", ".join(f"{r.peer}.{r.name}" for r in found)
            raise CdssError(
                f"mapping {mapping}: relation {atom.relation} is ambiguous ({options}); qualify it as PEER.{atom.relation}",
                atom.loc,
            )
        return found[0]

    def mapping(self, pm: ParsedMapping, pair: str = "", policy: tuple[bool, ...] = ()) -> Mapping:
        name = pm.name
        # messages about one direction of a `<->` mapping name the mapping as written
        shown = pair or name
        if not _IDENT.match(name):
            raise CdssError(f"mapping name {name!r} must start with a letter", pm.loc)
        types: dict[Var, tuple[str, str, Location]] = {}  # variable -> (type, where, loc)

        def atoms(parsed: tuple[ParsedAtom, ...]) -> tuple[MappingAtom, ...]:
            out = []
            for a in parsed:
                rel = self.resolve(a, shown)
                if len(a.args) != rel.arity:
                    raise CdssError(
                        f"mapping {shown}: {a.written} has {len(a.args)} argument(s) but {rel.peer}.{rel.name}"
                        f" has {rel.arity} ({', '.join(rel.attribute_names)})",
                        a.loc,
                    )
                for t, attr in zip(a.args, rel.attributes):
                    here = f"{a.written}.{attr.name}"
                    if isinstance(t, Const):
                        ctype = "int" if isinstance(t.value, int) else "str"
                        if ctype != attr.type:
                            raise CdssError(
                                f"mapping {shown}: constant {t.value!r} is {'an int' if ctype == 'int' else 'a str'}"
                                f" but {here} is {attr.type}",
                                a.loc,
                            )
                    elif t.name in RESERVED:
                        raise CdssError(f"mapping {shown}: {t.name!r} is a reserved word, not a variable name", a.loc)
                    elif t in types and types[t][0] != attr.type:
                        raise CdssError(
                            f"mapping {shown}: variable {t.name} is {types[t][0]} at {types[t][1]} but"
                            f" {attr.type} at {here}",
                            a.loc,
                        )
                    else:
                        types.setdefault(t, (attr.type, here, a.loc))
                out.append(MappingAtom(rel.ref, a.args, a.loc))
            return tuple(out)

        body, head = atoms(pm.body), atoms(pm.head)
        body_vars = {v for a in body for v in a.vars()}
        head_vars = {v for a in head for v in a.vars()}
        exists: list[Var] = []
        for v, loc in pm.existentials:
            if v in exists:
                raise CdssError(f"mapping {shown}: existential variable {v.name} is declared twice", loc)
            if v in body_vars:
                raise CdssError(
                    f"mapping {shown}: existential variable {v.name} also occurs"
                    + (" on the other side" if pair else " in the body")
                    + " (a body variable is universally quantified; rename one of them)",
                    loc,
                )
            if v not in head_vars:
                raise CdssError(f"mapping {shown}: existential variable {v.name} is not used in the head", loc)
            exists.append(v)
        for a in head:
            for v in a.vars():
                if v not in body_vars and v not in exists and pair:
                    side, where = ("left", f"{pair}: exists {v.name}. ... <->") if name == backward_name(pair) else (
                        "right", f"<-> exists {v.name}. ...")
                    raise CdssError(
                        f"mapping {shown}: variable {v.name} of the {side} side does not occur on the other"
                        f" side; declare it existential ({where})",
                        a.loc,
                    )
                if v not in body_vars and v not in exists:
                    raise CdssError(
                        f"mapping {shown}: head variable {v.name} occurs neither in the body nor after"
                        f" exists (write: -> exists {v.name}. ...)",
                        a.loc,
                    )
        return Mapping(name, body, head, tuple(exists), pm.text, pm.loc, pair, policy)

    # -- trust -----------------------------------------------------------------------------
    def policy(self, peer: Peer, table: dict) -> TrustPolicy:
        path = ("peers", peer.name)
        default = table.get("trust_default", "trust")
        if default not in TRUST_DEFAULTS:
            raise self.fail(
                f"trust_default must be \"trust\" or \"distrust\", not {default!r}", path + ("trust_default",)
            )
        rules_v = self.expect(table.get("trust", []), list, path + ("trust",), "an array of tables ([[peers.P.trust]])")
        rules = tuple(self.trust_rule(peer, i, r) for i, r in enumerate(rules_v))
        ranked = self.costs(peer, table["costs"]) if "costs" in table else None
        if "trust_only_from" in table:
            if ranked is not None:
                raise self.fail(
                    f"peer {peer.name} has both trust_only_from and [costs]: the ancestry reading is "
                    "enforced as ranked trust, so choose one", path + ("trust_only_from",), key=True
                )
            ranked = self.only_from(peer, table["trust_only_from"], path + ("trust_only_from",))
        return TrustPolicy(default, rules, ranked)

    def only_from(self, peer: Peer, value: Any, path: tuple) -> RankedTrust:
        """``trust_only_from``, the token (ancestry) reading of a trust condition ([Kar09] §4.8:
        "trust a tuple only if it came from P_GUS"): an import is accepted only when some
        Boolean-trusted derivation of it has every leaf (local data) from the listed peers or
        the peer itself. It is ranked trust in the tropical semiring's Boolean image -- listed
        peers' data cost 0, other peers' 1, mappings 0, threshold 0 -- so exchange enforces it
        by the same capped fixpoint as thresholds (a tuple accepted on other grounds upstream
        still counts as a leaf of its own peer only through its derivations)."""
        items = self.expect(value, list, path, "an array of peer names")
        allowed = {peer.name}
        for i, q in enumerate(items):
            self.expect(q, str, path + (i,), "a peer name")
            if q not in self.peer_names:
                raise self.fail(f"unknown peer {q!r} in trust_only_from", path + (i,))
            allowed.add(q)
        others = tuple((q, 1) for q in sorted(self.peer_names) if q not in allowed)
        return RankedTrust(others, (), 0)

    def trust_rule(self, peer: Peer, i: int, table: Any) -> TrustRule:
        path = ("peers", peer.name, "trust", i)
        self.expect(table, dict, path, "a table")
        self.known_keys(table, ("action", "relation", "from", "mappings", "when"), path)
        if "action" not in table:
            raise self.fail("a trust condition needs action = \"trust\" or \"distrust\"", path)
        action = table["action"]
        if action not in ("trust", "distrust"):
            raise self.fail(f"action must be \"trust\" or \"distrust\", not {action!r}", path + ("action",))
        relation = table.get("relation")
        rel: Relation | None = None
        if relation is not None:
            self.expect(relation, str, path + ("relation",), "a string")
            if (peer.name, relation) not in self.relations:
                names = ", ".join(r.name for r in peer.relations) or "none"
                raise self.fail(
                    f"peer {peer.name} has no relation {relation!r} (its relations: {names}); a peer's"
                    " trust conditions are about its own relations",
                    path + ("relation",),
                )
            rel = self.relations[(peer.name, relation)]
        sources = self.string_list(table.get("from", []), path + ("from",), "peer names")
        for j, s in enumerate(sources):
            if s not in self.peer_names:
                raise self.fail(f"unknown peer {s!r} in from", path + ("from", j))
        mappings = self.string_list(table.get("mappings", []), path + ("mappings",), "mapping names")
        for j, m in enumerate(mappings):
            if m not in self.mapping_names and m not in self.pairs:
                raise self.fail(f"unknown mapping {m!r}", path + ("mappings", j))
        # a `<->` mapping's name stands for both of its tgds
        mappings = [t for m in mappings for t in self.pairs.get(m, (m,))]
        when_text = table.get("when", "")
        self.expect(when_text, str, path + ("when",), "a string of comparisons")
        when: tuple[Condition, ...] = ()
        if when_text.strip():
            if rel is None:
                raise self.fail("a trust condition with `when` must name its relation (relation = \"...\")", path + ("when",))
            parsed = parse_condition(when_text, self.where.string(path + ("when",)))
            for cond, loc in parsed:
                self.check_condition(cond, rel, loc)
            when = tuple(c for c, _ in parsed)
        return TrustRule(action, relation, tuple(sources), tuple(mappings), when, when_text, self.where.value(path))

    def check_condition(self, cond: Condition, rel: Relation, loc: Location) -> None:
        types = []
        for t in (cond.left, cond.right):
            if isinstance(t, AttributeRef):
                if t.name not in rel.attribute_names:
                    raise CdssError(
                        f"trust condition: {rel.name} has no attribute {t.name} ({', '.join(rel.attribute_names)})", loc
                    )
                types.append((rel.attributes[rel.position(t.name)].type, t.name))
            else:
                types.append(("int" if isinstance(t.value, int) else "str", repr(t.value)))
        if types[0][0] != types[1][0]:
            raise CdssError(
                f"trust condition compares {types[0][1]} ({types[0][0]}) with {types[1][1]} ({types[1][0]})", loc
            )

    def costs(self, peer: Peer, table: Any) -> RankedTrust:
        path = ("peers", peer.name, "costs")
        self.expect(table, dict, path, "a table")
        self.known_keys(table, ("peers", "mappings", "threshold"), path)

        scales: list[tuple[str, float]] = []

        def cost_table(key: str, known: set[str], what: str) -> tuple[tuple[str, float], ...]:
            t = self.expect(table.get(key, {}), dict, path + (key,), f"a table of {what} costs")
            out = []
            for name, v in t.items():
                if name not in known and not (what == "mapping" and name in self.pairs):
                    raise self.fail(f"unknown {what} {name!r} in costs.{key}", path + (key, name), key=True)
                if what == "mapping" and isinstance(v, str):
                    scale, cost = self.mapping_function(v, path + (key, name))
                else:
                    scale, cost = 1, self.cost(v, path + (key, name))
                # a `<->` mapping's name stands for both of its tgds
                names = self.pairs.get(name, (name,)) if what == "mapping" else (name,)
                out.extend((n, cost) for n in names)
                scales.extend((n, scale) for n in names if scale != 1)
            return tuple(out)

        peer_costs = cost_table("peers", self.peer_names, "peer")
        mapping_costs = cost_table("mappings", self.mapping_names, "mapping")
        threshold = self.cost(table["threshold"], path + ("threshold",)) if "threshold" in table else None
        return RankedTrust(peer_costs, mapping_costs, threshold, tuple(scales))

    def mapping_function(self, text: str, path: tuple) -> tuple[float, float]:
        """``"Kx"`` / ``"Kx + c"`` / ``"x + c"`` -> (K, c). The laws the tropical semiring needs
        of a mapping function: it maps the semiring's zero (cost infinity: no derivation) to
        itself and distributes over min (f(min(a, b)) = min(f(a), f(b))). ``K x + c`` has both
        when K > 0 and c >= 0 (K = 0 would make an impossible input cost nothing). selp also
        needs K >= 1: then f(x) >= x, so a cycle through the mappings never lowers a cost (with
        K < 1 it would, round after round, like a negative cycle, and exchange would not end)."""
        m = _MAPPING_FUNCTION.fullmatch(text)
        if m is None:
            raise self.fail(f'a mapping function must be "Kx" or "Kx + c" (e.g. "2x"), not {text!r}', path)
        scale = float(m["k"]) if m["k"] is not None else 1.0
        cost = float(m["c"]) if m["c"] is not None else 0.0
        if not (1 <= scale < float("inf")) or not (0 <= cost < float("inf")):
            raise self.fail(
                f"mapping function {text!r} must have a factor >= 1 and a constant >= 0 "
                "(a step through a mapping must never make a derivation cheaper)", path
            )
        return (int(scale) if scale.is_integer() else scale), (int(cost) if cost.is_integer() else cost)

    def cost(self, v: Any, path: tuple) -> float:
        self.expect(v, (int, float), path, "a number")
        if v < 0 or v != v or v == float("inf"):
            raise self.fail(f"a cost must be a finite number >= 0, not {v}", path)
        return v


_NUM = r"-?[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?"
_MAPPING_FUNCTION = re.compile(rf"\s*(?:(?P<k>{_NUM})\s*\*?\s*)?x\s*(?:\+\s*(?P<c>{_NUM})\s*)?")


def _dotted(path: tuple) -> str:
    return ".".join(f"[{p}]" if isinstance(p, int) else p for p in path).replace(".[", "[")
