"""Property: on random valid programs and databases, the local engine equals the naive oracle."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.budget import examples
from helpers.paths import TRADE
from helpers.randprog import naive_fixpoint, programs_with_databases, strata_relations
from selp.database import load_database, write_relations
from selp.engines.local import evaluate
from selp.language import parse_program
from selp.language.validate import analyze

SETTINGS = settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(programs_with_databases())
def test_local_engine_equals_naive_fixpoint(case):
    text, db = case
    analysis = analyze(parse_program(text))
    expected = naive_fixpoint(analysis, db)
    assert evaluate(analysis, db) == expected


@settings(max_examples=examples(60), deadline=None)
@given(programs_with_databases())
def test_strata_are_the_least_stratification(case):
    text, _ = case
    program = parse_program(text)
    analysis = analyze(program)
    assert analysis.strata == strata_relations(program)
    # components: every rule belongs to its head's component, each exactly once
    assert sorted(r.name for c in analysis.components for r in c.rules) == sorted(r.name for r in program.rules)
    for comp in analysis.components:
        assert all(r.head.relation in comp.relations for r in comp.rules)


@settings(max_examples=examples(50), deadline=None)
@given(programs_with_databases(), st.randoms(use_true_random=False))
def test_evaluation_ignores_rule_and_fact_order(case, rnd):
    text, db = case
    analysis = analyze(parse_program(text))
    lines = text.splitlines()
    decls = [line for line in lines if line.startswith(".decl")]
    rules = [line for line in lines if not line.startswith(".decl")]
    rnd.shuffle(rules)
    shuffled = analyze(parse_program("\n".join(decls + rules)))
    db2 = {rel: set(rnd.sample(sorted(facts, key=repr), len(facts))) for rel, facts in db.items()}
    assert evaluate(shuffled, db2) == evaluate(analysis, db)


@settings(max_examples=examples(40), deadline=None)
@given(programs_with_databases(), st.sampled_from(["csv", "parquet"]))
def test_database_written_to_files_loads_back_to_the_same_answer(tmp_path_factory, case, fmt):
    """The generated databases survive a trip through CSV or Parquet files (EDB relations are
    declared), so engines that read files get the same input."""
    text, db = case
    analysis = analyze(parse_program(text))
    decls = {d.relation: d for d in analysis.program.decls}
    assert set(db) <= set(decls)
    out = tmp_path_factory.mktemp("db")
    columns = {rel: tuple(c for c, _ in decls[rel].columns) for rel in db}
    types = {rel: tuple(t for _, t in decls[rel].columns) for rel in db}
    write_relations(out, db, types, columns, fmt)
    loaded = load_database(analysis, out)
    assert loaded.facts == db
    assert evaluate(analysis, loaded.facts) == naive_fixpoint(analysis, db)


def test_the_oracle_itself_on_hand_computed_answers():

    from selp.database import load_database as load
    from selp.language import parse_program_file
    from selp.values import Skolem

    trade = TRADE
    analysis = analyze(parse_program_file(trade / "trade.dl"))
    db = load(analysis, trade / "db")
    countries = ["Cuba", "France", "Mexico"]
    assert naive_fixpoint(analysis, db.facts) == {"dealsWith": {(a, b) for a in countries for b in countries}}

    prog = (
        "tc(x, y) :- e(x, y).\ntc(x, y) :- tc(x, z), e(z, y).\n"
        "n(x) :- e(x, _).\nn(y) :- e(_, y).\nno(x, y) :- n(x), n(y), not tc(x, y), x < y.\n"
        "id(f(x)) :- n(x), x >= 3.\n"
        "e(3, 1).\n"  # inline facts count too
    )
    out = naive_fixpoint(analyze(parse_program(prog)), {"e": {(1, 2)}})
    assert out["tc"] == {(1, 2), (3, 1), (3, 2)}
    assert out["no"] == {(1, 3), (2, 3)}
    assert out["id"] == {(Skolem("f", (3,)),)}
