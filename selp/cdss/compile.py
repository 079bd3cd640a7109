"""Compile a CDSS to a datalog^sk program ([Kar09] §3.2, §4.8.2, §5.1; citations in docs/references.md).

**Internal relations.** Every peer relation ``R`` gets five relations with ``R``'s attributes:

=========  ====================================================================================
``R_l``    local contributions: the peer's own tuples (EDB).
``R_r``    rejections: imported tuples the peer's curators deleted (EDB).
``R_i``    input: every tuple the mappings derive for ``R``, trusted or not.
``R_t``    trusted input: the imported tuples the owner's trust policy accepts.
``R_o``    output: the peer's instance, which its users query and outgoing mappings read.
=========  ====================================================================================

``R`` stands for the relation's name when no other peer has a relation of that name, else for
``PEER_R``. Per mapping ``m`` there is a provenance relation ``P_m`` over all of ``m``'s body
variables (one row per instantiation of the mapping: a mapping node of the provenance graph).

**Rules** (each named, so derivation trees name their steps; :attr:`CompiledCDSS.origins` maps
every rule name back to what it stands for):

* ``l_R: R_o(x) :- R_l(x).`` — local contributions are in the instance.
* ``t_R: R_o(x) :- R_t(x), not R_r(x).`` — so are trusted imports that were not rejected (the
  VLDB'07 formulation with a rejection table, [GKIT07]).
* ``m: P_m(y) :- body(y).`` with every body relation ``S`` read as ``S_o``.
* ``m_j_i: R_i(head_j) :- P_m(y).`` for the j-th head atom: the import, unfiltered.
* ``m_j: R_t(head_j) :- P_m(y), <trust conditions>.`` for the j-th head atom: the import as far
  as the owner of ``R`` trusts it (several rules ``m_j``, ``m_j_alt2``, ... when the conditions
  are a disjunction; none when the step is never trusted).

An existential variable ``z`` of ``m`` becomes the Skolem term ``f_m_z(frontier)`` over the
frontier variables (those of the body that also occur in the head, in body order), the same term
in every head atom: one Skolem function per existential variable ([Kar09] §3.2).

**Trust, and the decisions taken where the dissertation is informal.** ``R_t`` is derived from
``P_m`` rather than from ``R_i`` because a trust condition may depend on the mapping and on its
source peers, which ``R_i`` has forgotten, and because ``R_i`` cannot be joined back with
``P_m`` when the head has Skolem terms (selp has no Skolem terms in bodies). So ``R_i`` is the
"input table" of every import and ``R_t`` ⊆ ``R_i`` its trusted part; derivation trees of ``R_o``
go ``R_o <- R_t <- P_m <- S_o ...``.

* A *step* — one instantiation of ``m`` producing an ``R`` tuple — is trusted by ``R``'s owner
  when (the owner trusts by default, or some of its ``trust`` rules match) and none of its
  ``distrust`` rules match. A tuple is trusted when some step producing it is (Boolean trust:
  product is AND, sum is OR), so distrusted tuples never reach ``R_o`` and never propagate.
* A rule matches a step when its ``mappings`` list is empty or names ``m``, its ``from`` list is
  empty or shares a peer with the peers whose relations ``m``'s body reads ("comes from ``P``"
  means the step's immediate sources; the dissertation leaves the meaning open), and its ``when``
  comparisons hold on the produced tuple.
* The formula is compiled into rules whose bodies are comparisons, as a *disjoint* disjunction
  (``not (a and b)`` becomes ``not a`` or ``a and not b``), so every trusted step is derived by
  exactly one rule and derivation trees are not duplicated.
* Comparisons follow selp's semantics for labeled nulls: a null equals only itself and is never
  ordered. The compiled conditions are exact for other values; an ordered comparison on a null
  is false *and so is its negation*, so a step whose trust depends on ordering a labeled null is
  distrusted (conservative; a later ``trust`` rule is then not reached either). Comparisons
  decided at compile time (constants; existential values, i.e. Skolem terms, against constants)
  are folded after negation, so they agree with what the engine would decide at run time.
* Trust is the policy of the peer that owns the target relation (our reading of [Kar09] §3.5), whatever peer
  later queries the instance.

**Ranked trust.** With a *viewpoint* peer, its costs become rule weights for selp's ``cost``
monoid (tropical semiring: costs add along a derivation, a tuple's rank is its cheapest tree):
``l_R`` weighs the cost of ``R``'s peer's local data and ``m`` the cost of the mapping. The
dissertation's example lets a mapping *scale* its input's cost (``f_m4(x) = 2x``, written
``m4 = "2x"``); rule weights in selp only add, so the weight of ``m`` is the additive part ``c``
of ``f_m(x) = K x + c``. Exchange's threshold check (:mod:`selp.cdss.ranked`) and
``selp cdss explain`` (which re-costs and re-ranks the engine's trees) apply the whole function.

A peer's *threshold* is enforced at exchange: every relation ``R`` of a peer with a threshold
gets an EDB relation ``R_x`` (the trusted imports above the threshold) and ``t_R`` reads
``R_o(x) :- R_t(x), not R_r(x), not R_x(x)``. Exchange computes ``R_x`` with the capped
min-cost fixpoint of :mod:`selp.cdss.ranked` (semantics and the argument that the Boolean
program with ``R_x`` keeps exactly the accepted tuples are there); relations of peers without a
threshold have no ``R_x``, so their programs are unchanged. ``selp cdss trust DIR --peer P``
(:func:`selp.cdss.trust_report.trust_report`) lists what the same fixpoint decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from selp.cdss.errors import CdssError
from selp.cdss.model import CDSS, AttributeRef, Mapping, MappingAtom, Relation, RelationRef, TrustRule
from selp.errors import Location
from selp.language.ast import Atom, Comparison, Const, Decl, Program, Rule, SkolemTerm, Term, Var
from selp.language.printer import format_decl, format_rule
from selp.language.validate import analyze
from selp.values import Value

KINDS = ("l", "r", "i", "t", "o", "x")
KIND_MEANING = {
    "l": "local contributions",
    "r": "rejections",
    "i": "imported through mappings",
    "t": "trusted imports",
    "o": "the peer's instance",
}
# R_x exists only for relations of a peer with a ranked-trust threshold (module docstring)
THRESHOLD_KIND = ("x", "trusted imports above the owner's ranked-trust threshold")
_NEGATE = {"=": "!=", "!=": "=", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}


@dataclass(frozen=True)
class RuleOrigin:
    """What a compiled rule stands for.

    ``kind`` is ``local`` (``l_R``), ``output`` (``t_R``), ``mapping`` (``P_m`` from the body),
    ``input`` (``R_i`` from ``P_m``) or ``trusted`` (``R_t`` from ``P_m``); ``head`` is the
    1-based head atom of the mapping for the last two.
    """

    kind: str
    relation: RelationRef | None = None
    mapping: str | None = None
    head: int | None = None


class InternalNames:
    """The names of internal relations, provenance relations and Skolem functions."""

    def __init__(self, cdss: CDSS) -> None:
        self.cdss = cdss
        counts: dict[str, int] = {}
        for r in cdss.relations():
            counts[r.name] = counts.get(r.name, 0) + 1
        self._base = {r.ref: r.name if counts[r.name] == 1 else f"{r.peer}_{r.name}" for r in cdss.relations()}

    def base(self, ref: RelationRef) -> str:
        """``B``, or ``PBioSQL_B`` when another peer also has a relation ``B``."""
        return self._base[ref]

    def relation(self, ref: RelationRef, kind: str) -> str:
        """The internal relation of ``kind`` (one of :data:`KINDS`): ``B_o``."""
        assert kind in KINDS
        return f"{self._base[ref]}_{kind}"

    @staticmethod
    def provenance(mapping: str) -> str:
        return f"P_{mapping}"

    def skolem(self, mapping: str, var: Var) -> str:
        """``f_m_z`` for existential ``z`` of mapping ``m``; ``f_m_v2_z`` once the tgd was edited
        (its version in the store), so an edited tgd's labeled nulls are never an old one's."""
        version = next((m.version for m in self.cdss.mappings if m.name == mapping), 1)
        return f"f_{mapping}_{var.name}" if version == 1 else f"f_{mapping}_v{version}_{var.name}"


@dataclass(frozen=True)
class CompiledCDSS:
    """A CDSS as a selp program, with the naming needed to read its results."""

    cdss: CDSS
    program: Program
    text: str  # the program printed with comments; parses back to ``program``
    names: InternalNames = field(compare=False)
    origins: dict[str, RuleOrigin] = field(compare=False)
    viewpoint: str | None = None

    def output_relations(self) -> dict[RelationRef, str]:
        """Each peer relation and its instance relation ``R_o``."""
        return {r.ref: self.names.relation(r.ref, "o") for r in self.cdss.relations()}


# -- trust formulas as disjoint disjunctions of conjunctions of comparisons --------------------
Literal = Comparison
Conj = tuple[Literal, ...]
DNF = list[Conj]  # [] is false, [()] is true
TRUE: DNF = [()]
FALSE: DNF = []


def _negate(c: Comparison) -> Comparison:
    return Comparison(_NEGATE[c.op], c.left, c.right)


def _and(x: DNF, y: DNF) -> DNF:
    out = []
    for a in x:
        for b in y:
            conj = tuple(dict.fromkeys(a + b))
            if not any(_negate(c) in conj for c in conj):  # c and not c: empty, drop
                out.append(conj)
    return out


def _not(x: DNF) -> DNF:
    """The complement, as a disjoint disjunction: not(a1 and a2 ...) = not a1 | a1 and not a2 | ..."""
    result = TRUE
    for conj in x:
        parts: DNF = [tuple(conj[:k]) + (_negate(conj[k]),) for k in range(len(conj))]
        result = _and(result, parts)
    return result


def _or(x: DNF, y: DNF) -> DNF:
    return x + _and(_not(x), y)


def _rule_matches(rule: TrustRule, m: Mapping) -> bool:
    if rule.mappings and m.name not in rule.mappings:
        return False
    if rule.sources and not set(rule.sources) & set(m.source_peers):
        return False
    return True


class _Compiler:
    def __init__(self, cdss: CDSS, viewpoint: str | None, unfiltered: bool = False) -> None:
        self.cdss = cdss
        self.unfiltered = unfiltered
        self.names = InternalNames(cdss)
        self.viewpoint = viewpoint
        self.ranked = cdss.peer(viewpoint).policy.ranked if viewpoint else None
        self.decls: list[Decl] = []
        self.rules: list[Rule] = []
        self.origins: dict[str, RuleOrigin] = {}
        self.lines: list[str] = []
        self.rule_locs: dict[str, Location] = {}

    # -- emitting ----------------------------------------------------------------------------
    def comment(self, text: str) -> None:
        self.lines.append("% " + " ".join(text.split()))

    def rule(self, rule: Rule, origin: RuleOrigin, loc: Location) -> None:
        if rule.name in self.origins:
            raise CdssError(
                f"the compiled rule name {rule.name} is generated twice (also for the item at"
                f" {self.rule_locs[rule.name]}); rename the mapping",
                loc,
            )
        self.rules.append(rule)
        self.origins[rule.name] = origin
        self.rule_locs[rule.name] = loc
        self.lines.append(format_rule(rule))

    @staticmethod
    def weight(cost: float | None) -> str | None:
        if cost is None:
            return None
        if isinstance(cost, int) or float(cost).is_integer():
            return str(int(cost))
        return repr(float(cost))

    # -- the program ---------------------------------------------------------------------------
    def compile(self) -> CompiledCDSS:
        self.check_names()
        for r in self.cdss.relations():
            cols = tuple((a.name, a.type) for a in r.attributes)
            for kind in KINDS:
                if kind != "x" or has_threshold(self.cdss, r.peer):
                    self.decls.append(Decl(self.names.relation(r.ref, kind), cols))
        for m in self.cdss.mappings:
            types = {}
            for a in m.body:
                rel = self.cdss.relation(a.relation)
                for t, attr in zip(a.args, rel.attributes):
                    if isinstance(t, Var):
                        types.setdefault(t, attr.type)
            self.decls.append(Decl(self.names.provenance(m.name), tuple((v.name, types[v]) for v in m.body_vars)))

        header = f"CDSS {self.cdss.name}" if self.cdss.name else "CDSS"
        self.comment(f"{header} compiled to datalog^sk by selp cdss compile")
        view = f"ranked trust of {self.viewpoint}" if self.viewpoint else "none (all rules unweighted)"
        self.comment(f"rule weights (costs for --monoid cost): {view}")
        if self.unfiltered:
            self.comment("unfiltered: no trust condition, rejection or threshold gates the imports")
        self.comment("internal relations of each peer relation R: " + ", ".join(f"R_{k} {v}" for k, v in KIND_MEANING.items()))
        if any(has_threshold(self.cdss, p.name) for p in self.cdss.peers):
            self.comment(f"R_{THRESHOLD_KIND[0]}: {THRESHOLD_KIND[1]} (computed by exchange, selp.cdss.ranked)")
        self.comment("P_m: one row per instantiation of mapping m (all its body variables)")
        self.lines.extend(format_decl(d) for d in self.decls)
        for p in self.cdss.peers:
            for r in p.relations:
                self.relation_rules(r)
        for m in self.cdss.mappings:
            self.mapping_rules(m)
        program = Program(tuple(self.decls), tuple(self.rules), ())
        analyze(program)  # a compiled program that selp refuses is a bug here, not a user error
        text = "\n".join(self.lines) + "\n"
        return CompiledCDSS(self.cdss, program, text, self.names, dict(self.origins), self.viewpoint)

    def check_names(self) -> None:
        seen: dict[str, tuple[str, Location]] = {}

        def claim(name: str, what: str, loc: Location) -> None:
            if name in seen:
                raise CdssError(
                    f"{what} compiles to relation {name}, which {seen[name][0]} at {seen[name][1]} also uses;"
                    " rename one of them",
                    loc,
                )
            seen[name] = (what, loc)

        for r in self.cdss.relations():
            for kind in KINDS:
                claim(self.names.relation(r.ref, kind), f"relation {r.peer}.{r.name}", r.loc)
        for m in self.cdss.mappings:
            claim(self.names.provenance(m.name), f"mapping {m.name}", m.loc)

    def relation_rules(self, r: Relation) -> None:
        xs = tuple(Var(a) for a in r.attribute_names)
        rel = lambda kind, neg=False: Atom(self.names.relation(r.ref, kind), xs, neg)  # noqa: E731
        base = self.names.base(r.ref)
        key = ", ".join(r.key)
        self.comment(f"peer {r.peer}, relation {r.name}({', '.join(r.attribute_names)}), key ({key})")
        cost = self.ranked.peer_cost(r.peer) if self.ranked else None
        self.rule(Rule(f"l_{base}", rel("o"), (rel("l"),), self.weight(cost)), RuleOrigin("local", r.ref), r.loc)
        gate = (rel("x", True),) if has_threshold(self.cdss, r.peer) else ()
        gates = () if self.unfiltered else (rel("r", True),) + gate
        self.rule(Rule(f"t_{base}", rel("o"), (rel("t"),) + gates), RuleOrigin("output", r.ref), r.loc)

    def mapping_rules(self, m: Mapping) -> None:
        self.comment(f"mapping {m.text or m.name}")
        prov = Atom(self.names.provenance(m.name), tuple(m.body_vars))
        body = tuple(Atom(self.names.relation(a.relation, "o"), a.args) for a in m.body)
        cost = self.ranked.mapping_cost(m.name) if self.ranked else None
        self.rule(Rule(m.name, prov, body, self.weight(cost)), RuleOrigin("mapping", mapping=m.name), m.loc)
        skolem = {z: SkolemTerm(self.names.skolem(m.name, z), tuple(m.frontier)) for z in m.existentials}
        for j, a in enumerate(m.head, start=1):
            args = tuple(skolem.get(t, t) if isinstance(t, Var) else t for t in a.args)
            self.rule(
                Rule(f"{m.name}_{j}_i", Atom(self.names.relation(a.relation, "i"), args), (prov,)),
                RuleOrigin("input", a.relation, m.name, j),
                m.loc,
            )
            head = Atom(self.names.relation(a.relation, "t"), args)
            formula, described = self.trust(m, a, args)
            if self.unfiltered:
                formula, described = TRUE, "every step (unfiltered: why-not explanations)"
            if described:
                self.comment(f"trust of {a.relation.peer} in {self.cdss.display_name(a.relation)} through {m.name}: {described}")
            if not formula:
                self.comment(f"{m.name}_{j}: never trusted, so no rule derives {head.relation} through {m.name}")
            for n, conj in enumerate(formula, start=1):
                name = f"{m.name}_{j}" if n == 1 else f"{m.name}_{j}_alt{n}"
                self.rule(Rule(name, head, (prov,) + conj), RuleOrigin("trusted", a.relation, m.name, j), m.loc)

    # -- trust -------------------------------------------------------------------------------
    def trust(self, m: Mapping, a: MappingAtom, args: tuple[Term, ...]) -> tuple[DNF, str]:
        """The trust formula of one head atom's steps, and a description for the comment."""
        rel = self.cdss.relation(a.relation)
        policy = self.cdss.peer(a.relation.peer).policy
        rules = [r for r in policy.rules_for(rel.name) if _rule_matches(r, m)]
        trusts = [r for r in rules if r.action == "trust"]
        distrusts = [r for r in rules if r.action == "distrust"]
        formula: DNF = TRUE
        if policy.default == "distrust":
            anyone: DNF = FALSE
            for r in trusts:
                anyone = _or(anyone, self.condition(r, rel, args, m))
            formula = anyone
        for r in distrusts:
            formula = _and(formula, _not(self.condition(r, rel, args, m)))
        formula = _fold(formula)
        parts = []
        if policy.default == "distrust":
            parts.append("distrusted by default")
        parts.extend(describe_trust_rule(r) for r in trusts + distrusts)
        return formula, "; ".join(parts)

    def condition(self, rule: TrustRule, rel: Relation, args: tuple[Term, ...], m: Mapping) -> DNF:
        """A rule's ``when`` over one head atom (comparisons may hold Skolem terms and constants
        on both sides until :func:`_fold` decides them)."""
        conj: list[Comparison] = []
        for c in rule.when:
            left, right = (self.operand(t, rel, args) for t in (c.left, c.right))
            skolems = [t for t in (left, right) if isinstance(t, SkolemTerm)]
            if len(skolems) == 1 and any(isinstance(t, Var) for t in (left, right)):
                raise CdssError(
                    f"trust condition {rule.when_text.strip()!r} compares an existential value of mapping"
                    f" {m.name} with a value of the body; compare it with a constant instead",
                    rule.loc,
                )
            conj.append(Comparison(c.op, left, right))
        return [tuple(conj)]

    @staticmethod
    def operand(t: AttributeRef | Const, rel: Relation, args: tuple[Term, ...]) -> Term:
        return args[rel.position(t.name)] if isinstance(t, AttributeRef) else t


def _decide(c: Comparison) -> bool | None:
    """True/False when decided at compile time, None when the rule must test it.

    Folding happens after negation (see :func:`_fold`), so it agrees with what the engine would
    do at run time: a labeled null equals only itself and is never ordered."""
    left, right = c.left, c.right
    if isinstance(left, Const) and isinstance(right, Const):
        a, b = left.value, right.value
        return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[c.op]  # type: ignore[operator]
    if isinstance(left, SkolemTerm) or isinstance(right, SkolemTerm):
        same = left == right
        return {"=": same, "!=": not same}.get(c.op, False)
    return None


def _fold(formula: DNF) -> DNF:
    """Drop decided literals: a false one removes its conjunction, a true one is left out."""
    out: DNF = []
    for conj in formula:
        kept = []
        for c in conj:
            d = _decide(c)
            if d is False:
                break
            if d is None:
                kept.append(c)
        else:
            out.append(tuple(kept))
    return out


def has_threshold(cdss: CDSS, peer: str) -> bool:
    """Whether ``peer``'s ranked trust has a threshold (its relations then get ``R_x``)."""
    ranked = cdss.peer(peer).policy.ranked
    return ranked is not None and ranked.threshold is not None


def thresholded_peers(cdss: CDSS) -> list[str]:
    """The peers whose ranked trust has a threshold, in declaration order."""
    return [p.name for p in cdss.peers if has_threshold(cdss, p.name)]


def compile_cdss(cdss: CDSS, viewpoint: str | None = None, unfiltered: bool = False) -> CompiledCDSS:
    """Compile ``cdss`` to a datalog^sk program (see the module docstring for its shape).

    ``viewpoint`` names the peer whose ranked-trust costs become rule weights (none: no weights).
    ``unfiltered`` drops every gate on imports — trust conditions, curators' rejections and
    thresholds — so the program derives what the mappings *would* import: the derivations a
    why-not explanation shows, each step then judged by :func:`step_rejections`.
    """
    if viewpoint is not None:
        try:
            cdss.peer(viewpoint)
        except KeyError:
            known = ", ".join(p.name for p in cdss.peers)
            raise CdssError(f"unknown peer {viewpoint!r} (peers: {known})") from None
    return _Compiler(cdss, viewpoint, unfiltered).compile()


def describe_trust_rule(rule: TrustRule) -> str:
    """``distrust from PGUS when nam >= 3``: a trust rule as users wrote it."""
    what = [rule.action]
    if rule.sources:
        what.append("from " + ", ".join(rule.sources))
    if rule.mappings:
        what.append("through " + ", ".join(rule.mappings))
    if rule.when_text.strip():
        what.append("when " + rule.when_text.strip())
    return " ".join(what)


def step_rejections(cdss: CDSS, mapping: str, head: int, values: tuple[Value, ...]) -> tuple[str, ...]:
    """Why the owner of the relation that head atom ``head`` (1-based) of ``mapping`` imports
    into distrusts the step producing ``values``: one reason per distrust rule that matches (and
    one when the owner distrusts by default and no trust rule matches); empty when trusted.

    Exactly the compiled rules' verdict: each rule's condition is built by the same code as the
    ``m_j`` rules and evaluated with the engines' comparison semantics (labeled nulls are never
    ordered, so a distrust rule ordering one rejects, as the compiled formula does)."""
    from selp.engines.joins import compare

    m = cdss.mapping(mapping)
    a = m.head[head - 1]
    rel = cdss.relation(a.relation)
    policy = cdss.peer(a.relation.peer).policy
    rules = [r for r in policy.rules_for(rel.name) if _rule_matches(r, m)]
    args = tuple(Const(v) for v in values)
    compiler = _Compiler(cdss, None)

    def holds(formula: DNF) -> bool:
        return any(all(compare(c.op, c.left.value, c.right.value) for c in conj) for conj in formula)  # type: ignore[union-attr]

    reasons: list[str] = []
    owner = a.relation.peer
    if policy.default == "distrust" and not any(
        holds(compiler.condition(r, rel, args, m)) for r in rules if r.action == "trust"
    ):
        reasons.append(f"{owner} distrusts by default and no trust rule of {owner} matches")
    for r in rules:
        if r.action == "distrust" and not holds(_not(compiler.condition(r, rel, args, m))):
            reasons.append(f"{owner}'s rule at {r.loc}: {describe_trust_rule(r)}")
    return tuple(reasons)

