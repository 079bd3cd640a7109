"""The Spark DTable engine (selp.topk.spark): the paper's example, brute force over small
recursive programs for several monoids, saving and loading, and its refusals."""

from __future__ import annotations

from functools import reduce
from pathlib import Path

import pytest

from helpers.paths import ROOT
from selp.bench.datasets import spec
from selp.database import load_database
from selp.engines.local import evaluate
from selp.errors import SelpError
from selp.language import parse_program, parse_program_file
from selp.language.pattern_parser import parse_pattern
from selp.language.validate import analyze
from selp.reference.derivations import DerivationTree, enumerate_trees
from selp.topk.dtable import load_dtable
from selp.topk.monoid import Monoid, get_monoid
from selp.topk.task import make_task

pytestmark = pytest.mark.spark

TRADE = ROOT / "examples" / "trade"

# A weighted graph with a transitive rule, a symmetry rule (cycles: every fact has infinitely
# many trees), a rule joining two IDB atoms (k^2 combinations), a comparison, negations, a
# Skolem term and nullary relations (none has no facts). Every weight is a binary fraction, so
# products and sums are exact in floating point and ties between trees are real ties in both the
# engine and the brute force. The data weighs 5 -> 4 twice (the last cell wins) and writes one
# weight with a space (parsed by the monoid in Python, not natively).
GRAPH = """
.decl e(a: int, b: int)
r1 (0.5): p(x, y) :- e(x, y).
r2 (0.5): p(x, y) :- p(x, z), e(z, y).
r3 (0.25): p(x, y) :- p(y, x).
r4 (0.5): q(x, y) :- p(x, z), p(z, y), x != y.
r5 (0.5): s(x, f(x)) :- e(x, _), not p(x, x).
r6 (0.5): some :- q(x, y), not none.
"""
EDGES = "a,b,_weight\n1,2,0.5\n2,3,\n3,1,0.75\n2,4, 1\n5,4,1\n5,4,0.25\n"
# the largest rule weight (confidence) and the smallest rule cost, used to bound big trees
MAX_RULE_CONFIDENCE = 0.5
MIN_RULE_COST = 0.25
MAX_RULES = 10  # brute force enumerates every tree with at most this many rule occurrences


@pytest.fixture
def global_rounds(spark):
    """Pins a test of the global rounds' own mechanics (extra entries, round limit, prefilter,
    small rounds) to them: its programs' symmetric or value-passing rules would otherwise
    decompose by value components and run partition-locally."""
    spark.conf.set("spark.selp.partitionLocal", "false")
    yield
    spark.conf.unset("spark.selp.partitionLocal")


def analysis_of(text: str):
    return analyze(parse_program(text, "prog.dl"))


def run(spark, analysis, db_dir, monoid: str | Monoid, k: int, pattern: str | None = None, **kw):
    from selp.topk.spark import run_topk_spark

    m = get_monoid(monoid) if isinstance(monoid, str) else monoid
    types = load_database(analysis, db_dir).types
    task = make_task(analysis, types, m, k, parse_pattern(pattern) if pattern else None, pattern)
    return run_topk_spark(task, str(db_dir), spark, **kw)


@pytest.fixture(scope="module")
def graph_db(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("graph")
    (d / "e.csv").write_text(EDGES, encoding="utf-8")
    return d


# --- the paper's example ---------------------------------------------------------------------


def test_trade_example_top2(spark, tmp_path):
    """Example 3.11: the two best derivations of dealsWith(Cuba, France) that use
    exports(Cuba, tobacco) weigh 0.4 and 0.28; saved and loaded, the DTable is the same."""
    analysis = analyze(parse_program_file(TRADE / "trade.dl"))
    rounds = []
    res = run(spark, analysis, TRADE / "db", "confidence", 2, "dealsWith(Cuba, *) // exports(Cuba, tobacco)",
              progress=lambda r, changed, total: rounds.append((r, changed, total)))
    try:
        table = res.to_dtable()
        answers = table.answers()
        cf = answers[("dealsWith", ("Cuba", "France"))]
        assert [round(e.weight, 10) for e in cf] == [0.4, 0.28]
        assert [e.size for e in cf] == [2, 4]
        assert set(answers) == {("dealsWith", ("Cuba", c)) for c in ("France", "Mexico", "Cuba")}
        assert res.answer_count() == 3
        totals = [total for _, _, total in rounds]
        assert totals == sorted(totals) and totals[-1] == res.count() - res.extra_entries
        assert [r for r, _, _ in rounds] == list(range(1, len(rounds) + 1))
        # every pointer of the collected table leads to an entry of it
        for entries in table.entries.values():
            for e in entries:
                for rel, values, rank in e.children:
                    assert len(table.entries[(rel, values)]) >= rank

        # only the entries reachable from the asked fact are collected
        one = res.to_dtable([("dealsWith", ("Cuba", "Mexico"))])
        assert set(one.answers()) == {("dealsWith", ("Cuba", "Mexico"))}
        assert one.answers() == {k: v for k, v in answers.items() if k == ("dealsWith", ("Cuba", "Mexico"))}
        assert set(one.entries) < set(table.entries)
        assert res.to_dtable([("dealsWith", ("Nowhere", "Mexico"))]).entries == {}

        # save -> load_dtable round trip: every entry, and the same metadata
        out = tmp_path / "dt"
        res.save(out)
        res.save(out)  # replacing an existing one
        loaded = load_dtable(out)
        assert sum(len(v) for v in loaded.entries.values()) == res.count()
        assert loaded.answers() == answers
        for key, entries in table.entries.items():
            assert loaded.entries[key] == entries
        for attr in ("k", "monoid", "pattern", "roots", "relation_origin", "rule_origin", "rule_weights", "types"):
            assert getattr(loaded, attr) == getattr(table, attr), attr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["dt"]  # no temporary left behind
    finally:
        res.close()


# --- brute force -----------------------------------------------------------------------------


def tree_weight(tree: DerivationTree, monoid: Monoid, rule_raw: dict, fact_raw: dict):
    """The weight of a tree of P computed from the monoid's definition."""
    parts = []
    for node in tree.nodes():
        if node.rule is None:
            parts.append(monoid.fact_weight(fact_raw.get(node.relation, {}).get(node.values)))
        else:
            parts.append(monoid.rule_weight(rule_raw[node.rule]))
    return reduce(monoid.combine, parts, monoid.one)


def outside_bound(monoid: str) -> float:
    """The best sort key any tree with more than MAX_RULES rule occurrences can have."""
    n = MAX_RULES + 1
    if monoid == "confidence":
        return -(MAX_RULE_CONFIDENCE ** n)  # rules weigh <= 0.5, facts <= 1
    if monoid == "cost":
        return n * MIN_RULE_COST  # rules cost >= 0.25, facts >= 0
    assert monoid == "size"
    return -(-n)  # key(-n): one more rule occurrence than enumerated


@pytest.mark.parametrize("monoid", ["confidence", "cost", "size"])
def test_brute_force_graph(spark, graph_db, monoid):
    """Per fact, the engine's k best (weight, size) equal the best trees among all trees of at
    most MAX_RULES rule occurrences -- compared on the prefix that no bigger tree can enter."""
    k = 2
    analysis = analysis_of(GRAPH)
    m = get_monoid(monoid)
    db = load_database(analysis, graph_db)
    res = run(spark, analysis, graph_db, monoid, k)
    try:
        answers = res.to_dtable().answers()
        assert res.answer_count() == len(answers)
    finally:
        res.close()
    # the facts are those of the fixpoint (negation and comparison as in the evaluator)
    fixpoint = evaluate(analysis, db.facts)
    assert set(answers) == {(rel, f) for rel, facts in fixpoint.items() for f in facts}

    rule_raw = {r.name: r.weight for r in analysis.program.rules}
    trees = enumerate_trees(analysis, db.facts, MAX_RULES)
    bound = outside_bound(monoid)
    full = 0
    for fact, entries in answers.items():
        assert len(entries) <= k
        assert len({e.origin for e in entries}) == len(entries)
        got = [(m.key(e.weight), e.size) for e in entries]
        assert got == sorted(got)
        brute = sorted((m.key(tree_weight(t, m, rule_raw, db.weights)), t.size()) for t in trees.get(fact, ()))
        sure = [p for p in brute if p[0] < bound]  # no tree left out can tie or beat these
        n = min(len(sure), k)
        assert got[:n] == sure[:n], fact
        full += n == k
    assert full >= 5, "the bound leaves too few facts to compare"


def test_access_and_children_outliving_their_rank(spark, global_rounds, tmp_path):
    """access (letters parsed natively, any case; a tree is as public as its most secret part).

    With k = 1, c(1) first has a C tree of size 1 and p(1) = S is built on it (size 2); later
    c(1) gets a U tree (size 3) and drops the C one. The p(1) built on the U tree is no better
    (S, size 4), so p(1) keeps pointing at the dropped entry, which comes back after the k best
    (rank 2) so that every pointer still leads to an entry."""
    prog = analysis_of(
        """
        r1 (U): c(x) :- e(x).
        r2 (u): c(x) :- h(x, y), c(y).
        r3 (S): p(x) :- c(x).
        r4: c(x) :- p(x), never(x).
        """
    )
    (tmp_path / "e.csv").write_text("x,_weight\n1,c\n3,U\n", encoding="utf-8")
    (tmp_path / "h.csv").write_text("x,y,_weight\n1,2,\n2,3,u\n", encoding="utf-8")
    (tmp_path / "never.csv").write_text("x\n", encoding="utf-8")
    res = run(spark, prog, tmp_path, "access", 1)
    try:
        table = res.to_dtable()
        # 4 leaves, c(1..3) and p(1..3), and the C tree of c(1) at rank 2
        assert res.extra_entries == 1 and res.count() == 4 + 3 + 3 + 1
    finally:
        res.close()
    answers = table.answers()
    got = {fact: [(e.weight, e.size) for e in entries] for fact, entries in answers.items()}
    assert got == {
        ("c", (1,)): [(3, 3)], ("c", (2,)): [(3, 2)], ("c", (3,)): [(3, 1)],
        ("p", (1,)): [(1, 2)], ("p", (2,)): [(1, 3)], ("p", (3,)): [(1, 2)],
    }
    (p1,) = table.entries[("p", (1,))]
    assert p1.children == (("c", (1,), 2),)
    assert [(e.weight, e.size) for e in table.entries[("c", (1,))]] == [(3, 3), (2, 1)]


# --- refusals and errors -----------------------------------------------------------------------


def test_monoid_without_spark_expressions_is_refused(spark, graph_db):
    local_only = Monoid("local-product", 1.0, lambda a, b: a * b, lambda w: -w, float)
    with pytest.raises(SelpError, match="monoid local-product has no Spark column expressions; use --engine local"):
        run(spark, analysis_of(GRAPH), graph_db, local_only, 2)


def test_bad_fact_weight_is_reported(spark, tmp_path):
    (tmp_path / "e.csv").write_text("a,b,_weight\n1,2,0.5\n2,3,1.5\n", encoding="utf-8")
    with pytest.raises(SelpError, match=r"e\(2, 3\).*'1.5' is not valid for monoid confidence"):
        run(spark, analysis_of(GRAPH), tmp_path, "confidence", 2)


def test_round_limit(spark, global_rounds, graph_db):
    with pytest.raises(SelpError, match="did not converge in 2 rounds"):
        run(spark, analysis_of(GRAPH), graph_db, "confidence", 2, max_rounds=2)


def test_candidate_prefilter_changes_nothing(spark, global_rounds, tmp_path):
    """Dropping candidates that sort after a full fact's k-th best before the shuffle (the
    broadcast prefilter) gives the same DTable as merging every candidate: same facts, and per
    fact the same weights, sizes and origins in the same order."""
    from selp.bench.datasets import generate_scaled

    db_dir = tmp_path / "tc"
    generate_scaled("tc", db_dir, 600, seed=3)
    analysis = analyze(parse_program_file(spec("tc").program))

    def answers(prefilter_rows: int):
        spark.conf.set("spark.selp.prefilterRows", str(prefilter_rows))
        try:
            res = run(spark, analysis, db_dir, "confidence", 3)
            try:
                return {f: [(e.weight, e.size, e.origin) for e in es] for f, es in res.to_dtable().answers().items()}
            finally:
                res.close()
        finally:
            spark.conf.unset("spark.selp.prefilterRows")

    with_prefilter, without = answers(10_000_000), answers(0)
    assert len(with_prefilter) >= 500
    assert with_prefilter == without
    assert all(len(es) == 3 for es in with_prefilter.values())


def test_small_rounds_change_nothing(spark, global_rounds, tmp_path, monkeypatch):
    """Rounds that touch few facts merge them into a small overlay of theta instead of
    rewriting theta (folded in when it grows): the DTable is the same as when every round
    rewrites theta -- same facts, and per fact the same weights, sizes and origins in order."""
    # a ring of 40 nodes and two chords: 14 rounds, the late ones changing a few facts
    db_dir = tmp_path / "ring"
    db_dir.mkdir()
    n = 40
    links = [(i, (i + 1) % n, (0.5, 0.75, 1)[i % 3]) for i in range(n)] + [(0, 20, 0.25), (10, 30, 0.5)]
    rows = [f"{a},{b},{w}" for x, y, w in links for a, b in ((x, y), (y, x))]
    (db_dir / "edge.csv").write_text("src,dst,_weight\n" + "\n".join(rows) + "\n", encoding="utf-8")
    analysis = analyze(parse_program_file(spec("tc").program))
    # guess one candidate per delta entry, so that every round after the first few is small here
    monkeypatch.setattr("selp.topk.spark._FANOUT", 1)

    def answers(broadcast_rows: int):
        res = run(spark, analysis, db_dir, "confidence", 3, broadcast_rows=broadcast_rows)
        try:
            table = {f: [(e.weight, e.size, e.origin) for e in es] for f, es in res.to_dtable().answers().items()}
            return table, res.small_rounds, res.count()
        finally:
            res.close()

    # 1: no round is small; 600: small rounds whose overlay is folded into theta every few
    # rounds (3 times); the default: small rounds, the overlay folded only at the end
    whole, none, n_whole = answers(1)
    folded, some, n_folded = answers(600)
    kept, more, n_kept = answers(200_000)
    assert none == 0 and some >= 5 and more >= 5
    assert len(whole) == n * n
    assert folded == whole and kept == whole
    assert n_folded == n_whole == n_kept
