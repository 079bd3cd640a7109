"""The local engine on hand-computed programs: the paper's trade example, recursion, negation,
Skolem terms, comparisons and corner cases of atoms."""

from __future__ import annotations


import pytest

from helpers.paths import TRADE
from selp.engines.local import EvalStats, evaluate
from selp.engines.result import run_local
from selp.language import parse_program, parse_program_file
from selp.language.validate import analyze
from selp.values import Skolem



def run(text: str, edb: dict | None = None) -> dict[str, set]:
    return evaluate(analyze(parse_program(text)), edb or {})


# --- the trade example ------------------------------------------------------------------------


def test_trade_example_by_hand():
    # imports(a, c), exports(b, c):  Cuba-France (wine), Mexico-France (wine),
    # Mexico-Cuba (tobacco), France-Cuba (tobacco); the EDB copy adds Mexico-France again.
    # Symmetry then relates every pair of distinct countries among {Cuba, France, Mexico}, and
    # transitivity through a partner (a, f), (f, a) adds every country to itself: all 9 pairs.
    result = run_local(analyze(parse_program_file(TRADE / "trade.dl")), TRADE / "db")
    countries = ["Cuba", "France", "Mexico"]
    assert result.rows("dealsWith") == {(a, b) for a in countries for b in countries}
    assert result.relations() == ["dealsWith"]
    assert result.count("dealsWith") == 9
    assert result.types["dealsWith"] == ("str", "str")
    assert result.columns["dealsWith"] == ("a", "b")
    assert result.warnings == []


def test_trade_rules_one_at_a_time():
    db = {
        "exports": {("France", "wine"), ("Cuba", "tobacco"), ("Cuba", "coffee beans")},
        "imports": {("Cuba", "wine"), ("Mexico", "wine"), ("Mexico", "tobacco"), ("France", "tobacco")},
        "dealsWith_edb": {("Mexico", "France")},
    }
    base = "r0: dealsWith(a, b) :- dealsWith_edb(a, b).\nr2: dealsWith(a, b) :- imports(a, c), exports(b, c).\n"
    direct = {("Mexico", "France"), ("Cuba", "France"), ("Mexico", "Cuba"), ("France", "Cuba")}
    assert run(base, db)["dealsWith"] == direct
    sym = run(base + "r1: dealsWith(a, b) :- dealsWith(b, a).", db)["dealsWith"]
    assert sym == direct | {("France", "Mexico"), ("France", "Cuba"), ("Cuba", "Mexico"), ("Cuba", "France")}
    # without symmetry, transitivity only adds Mexico-France-Cuba (already there as Mexico-Cuba)
    # and Cuba-France-Cuba, France-Cuba-France
    trans = run(base + "r3: dealsWith(a, b) :- dealsWith(a, f), dealsWith(f, b).", db)["dealsWith"]
    assert trans == direct | {("Cuba", "Cuba"), ("France", "France")}


def test_trade_result_written_to_csv(tmp_path):
    result = run_local(analyze(parse_program_file(TRADE / "trade.dl")), TRADE / "db")
    paths = result.write(tmp_path)
    assert paths == [str(tmp_path / "dealsWith.csv")]
    lines = (tmp_path / "dealsWith.csv").read_text().splitlines()
    assert lines[0] == "a,b" and len(lines) == 10
    assert lines[1:4] == ["Cuba,Cuba", "Cuba,France", "Cuba,Mexico"]


# --- recursion ----------------------------------------------------------------------------------


TC = "tc(x, y) :- e(x, y).\ntc(x, y) :- tc(x, z), e(z, y).\n"


def test_transitive_closure_of_a_chain_with_a_cycle():
    edges = {(1, 2), (2, 3), (3, 4), (4, 2), (5, 6)}
    stats = EvalStats()
    out = evaluate(analyze(parse_program(TC)), {"e": edges}, stats=stats)
    expected = {(1, 2), (1, 3), (1, 4)} | {(a, b) for a in (2, 3, 4) for b in (2, 3, 4)} | {(5, 6)}
    assert out["tc"] == expected
    assert stats.iterations >= 3 and stats.seconds >= 0


def test_transitive_closure_nonlinear_and_long_chain():
    n = 60
    edges = {(i, i + 1) for i in range(n)}
    expected = {(i, j) for i in range(n + 1) for j in range(i + 1, n + 1)}
    assert run(TC, {"e": edges})["tc"] == expected
    nonlinear = "tc(x, y) :- e(x, y).\ntc(x, y) :- tc(x, z), tc(z, y).\n"
    assert run(nonlinear, {"e": edges})["tc"] == expected


def test_mutual_recursion_even_and_odd_path_lengths():
    prog = (
        "even(x, x) :- node(x).\n"
        "odd(x, y) :- even(x, z), e(z, y).\n"
        "even(x, y) :- odd(x, z), e(z, y).\n"
    )
    out = run(prog, {"node": {(0,), (1,), (2,), (3,)}, "e": {(0, 1), (1, 2), (2, 3)}})
    assert out["even"] == {(0, 0), (1, 1), (2, 2), (3, 3), (0, 2), (1, 3)}
    assert out["odd"] == {(0, 1), (1, 2), (2, 3), (0, 3)}


def test_progress_reports_each_iteration():
    seen = []
    evaluate(
        analyze(parse_program(TC)),
        {"e": {(1, 2), (2, 3), (3, 4)}},
        progress=lambda comp, it, delta, total: seen.append((comp.relations, it, delta, total)),
    )
    assert seen == [(("tc",), 1, 3, 3), (("tc",), 2, 2, 5), (("tc",), 3, 1, 6), (("tc",), 4, 0, 6)]


# --- negation -----------------------------------------------------------------------------------


def test_negation_across_strata():
    prog = TC + (
        "node(x) :- e(x, _).\nnode(y) :- e(_, y).\n"
        "unreachable(x, y) :- node(x), node(y), not tc(x, y).\n"
        "isolated(x) :- node(x), not unreachable(x, _).\n"
    )
    out = run(prog, {"e": {(1, 2), (2, 1), (2, 3)}})
    assert out["tc"] == {(1, 2), (2, 1), (1, 1), (2, 2), (2, 3), (1, 3)}
    assert out["unreachable"] == {(3, 1), (3, 2), (3, 3)}
    assert out["isolated"] == {(1,), (2,)}


def test_negation_with_constants_and_anonymous_positions():
    prog = 'p(x) :- a(x), not b(x, "no").\nq(x) :- a(x), not b(_, x).\nr(x) :- a(x), not b(x, _).'
    out = run(prog, {"a": {("u",), ("v",), ("w",)}, "b": {("u", "no"), ("v", "yes"), ("z", "w")}})
    assert out["p"] == {("v",), ("w",)}
    assert out["q"] == {("u",), ("v",)}
    assert out["r"] == {("w",)}


def test_negated_nullary_and_rules_without_positive_atoms():
    out = run("ok :- not bad.\nfine(1) :- 1 < 2.\nnever(1) :- 2 < 1.\nbadness :- bad.", {})
    assert out == {"ok": {()}, "fine": {(1,)}, "never": set(), "badness": set()}
    out = run("ok :- not bad.\nbadness :- bad.", {"bad": {()}})
    assert out == {"ok": set(), "badness": {()}}


# --- Skolem terms ---------------------------------------------------------------------------------


def test_skolem_heads_are_deterministic_labeled_nulls():
    prog = (
        'person(f(n), n) :- emp(n, _).\n'
        'manager(f(n), f(m)) :- emp(n, m).\n'
        'tagged(g(n, "x", h())) :- emp(n, _).\n'
    )
    out = run(prog, {"emp": {("ann", "bob"), ("bob", "bob")}})
    f = lambda v: Skolem("f", (v,))  # noqa: E731
    assert out["person"] == {(f("ann"), "ann"), (f("bob"), "bob")}
    # the same function and arguments give the same value, across rules
    assert out["manager"] == {(f("ann"), f("bob")), (f("bob"), f("bob"))}
    assert out["tagged"] == {(Skolem("g", (n, "x", Skolem("h", ()))),) for n in ("ann", "bob")}
    assert repr(Skolem("g", ("ann", "x", Skolem("h", ())))) == 'g("ann","x",h())'


def test_labeled_nulls_join_only_with_themselves():
    prog = 'id(f(n)) :- emp(n).\nsame(x, y) :- id(x), id(y), x = y.\ndiff(x) :- id(x), x != "a".\n'
    out = run(prog, {"emp": {("a",), ("b",)}})
    nulls = {Skolem("f", ("a",)), Skolem("f", ("b",))}
    assert out["same"] == {(v, v) for v in nulls}
    assert out["diff"] == {(v,) for v in nulls}  # a labeled null is never equal to a constant


def test_labeled_nulls_are_never_ordered():
    prog = (
        "n(f(x)) :- e(x).\nm(x) :- e(x).\nm(x) :- n(x).\n"
        "lt(x) :- m(x), x < 5.\nle(x) :- m(x), x <= 5.\ngt(x) :- m(x), x > 5.\nge(x) :- m(x), x >= 5.\n"
        "pairs(x, y) :- n(x), n(y), x < y.\nself(x) :- n(x), x <= x.\nne(x) :- m(x), x != 5.\n"
    )
    out = run(prog, {"e": {(3,), (7,)}})
    assert out["lt"] == {(3,)} and out["le"] == {(3,)}
    assert out["gt"] == {(7,)} and out["ge"] == {(7,)}
    assert out["pairs"] == set() and out["self"] == set()
    assert out["ne"] == {(3,), (7,), (Skolem("f", (3,)),), (Skolem("f", (7,)),)}


def test_skolem_values_feed_a_later_stratum_without_growing():
    prog = "n(f(x)) :- e(x).\nc(x, y) :- n(x), n(y).\nc(x, y) :- c(y, x).\n"
    out = run(prog, {"e": {(1,), (2,)}})
    vals = [Skolem("f", (1,)), Skolem("f", (2,))]
    assert out["c"] == {(a, b) for a in vals for b in vals}


# --- comparisons ----------------------------------------------------------------------------------


def test_comparisons_on_ints_are_numeric():
    prog = "\n".join(f"c{i}(x) :- e(x), x {op} 10." for i, op in enumerate(["=", "!=", "<", "<=", ">", ">="]))
    out = run(prog, {"e": {(9,), (10,), (100,), (-3,)}})
    assert [out[f"c{i}"] for i in range(6)] == [
        {(10,)},
        {(9,), (100,), (-3,)},
        {(9,), (-3,)},
        {(9,), (10,), (-3,)},
        {(100,)},
        {(10,), (100,)},
    ]


def test_comparisons_on_strings_are_lexicographic():
    prog = 'lt(x) :- e(x), x < "b".\nge(x) :- e(x), "b" <= x.\npair(x, y) :- e(x), e(y), x < y.'
    out = run(prog, {"e": {("a",), ("b",), ("B",), ("ab",), ("ba",), ("",)}})
    assert out["lt"] == {("a",), ("B",), ("ab",), ("",)}
    assert out["ge"] == {("b",), ("ba",)}
    assert len(out["pair"]) == 15  # every unordered pair of 6 distinct strings, once


def test_int_comparisons_through_loaded_data_are_numeric(tmp_path):
    (tmp_path / "e.csv").write_text("n\n9\n10\n100\n")
    prog = analyze(parse_program("small(x) :- e(x), x < 10."))
    assert run_local(prog, tmp_path).rows("small") == {(9,)}  # "10" < "9" as text, not as numbers


def test_constant_comparisons_and_variable_equality():
    out = run('p(x) :- e(x), 1 = 1.\nq(x) :- e(x), "a" = "b".\nr(x, y) :- e(x), e(y), x = y.', {"e": {(1,), (2,)}})
    assert out["p"] == {(1,), (2,)} and out["q"] == set() and out["r"] == {(1, 1), (2, 2)}


# --- atoms: repeated variables, constants, nullary relations ------------------------------------


def test_repeated_variables_in_an_atom():
    out = run("p(x) :- e(x, x).\nq(x, y) :- t(x, y, x).", {"e": {(1, 1), (1, 2), (3, 3)}, "t": {(1, 2, 1), (1, 2, 3)}})
    assert out["p"] == {(1,), (3,)}
    assert out["q"] == {(1, 2)}


def test_repeated_variable_in_a_recursive_delta_atom():
    prog = "loop(x) :- e(x, x).\nr(x, y) :- e(x, y).\nr(x, y) :- r(x, z), e(z, y).\nself(x) :- r(x, x)."
    out = run(prog, {"e": {(1, 2), (2, 1), (3, 4)}})
    assert out["self"] == {(1,), (2,)} and out["loop"] == set()


def test_constants_in_bodies_and_heads():
    prog = 'p(y, "tag", 0) :- e("Cuba", y).\nq(x) :- e(x, "wine").\nr(1) :- e(_, "wine").'
    out = run(prog, {"e": {("Cuba", "tobacco"), ("France", "wine"), ("Cuba", "wine")}})
    assert out["p"] == {("tobacco", "tag", 0), ("wine", "tag", 0)}
    assert out["q"] == {("France",), ("Cuba",)}
    assert out["r"] == {(1,)}


def test_int_and_string_constants_do_not_match_each_other():
    out = run('p(x) :- e(x, 1).\nq(x) :- e(x, "1").', {"e": {("a", 1), ("b", "1")}})
    assert out == {"p": {("a",)}, "q": {("b",)}}


def test_nullary_relations():
    prog = "nonempty :- e(_).\nhas_both :- nonempty, f(_).\nout(x) :- e(x), has_both.\nnone :- g(_)."
    out = run(prog, {"e": {(1,), (2,)}, "f": {("a",)}})
    assert out == {"nonempty": {()}, "has_both": {()}, "out": {(1,), (2,)}, "none": set()}
    out = run(prog, {"e": {(1,)}})
    assert out["nonempty"] == {()} and out["has_both"] == set() and out["out"] == set()


def test_nullary_recursion():
    out = run("reach(x) :- start(x).\nreach(y) :- reach(x), e(x, y).\ngoal :- reach(9).", {"start": {(1,)}, "e": {(1, 5), (5, 9)}})
    assert out["goal"] == {()}


def test_inline_facts_are_loaded_by_run_local():
    prog = analyze(parse_program('p(x) :- e(x).\n(0.5): e("a").\ne("b").'))
    assert run_local(prog, None).rows("p") == {("a",), ("b",)}


def test_edb_facts_for_unknown_relations_are_ignored():
    assert run("p(x) :- e(x).", {"e": {(1,)}, "zzz": {(2,)}}) == {"p": {(1,)}}


def test_duplicate_derivations_are_counted_once():
    out = run("p(x) :- e(x, _).\np(x) :- e(_, x).", {"e": {(1, 2), (2, 1), (1, 1)}})
    assert out["p"] == {(1,), (2,)}


@pytest.mark.parametrize("n", [1, 2, 5])
def test_same_generation_bigger_join(n):
    # a complete binary tree of depth n: nodes at the same depth are of the same generation
    edges = {(i, 2 * i) for i in range(1, 2**n)} | {(i, 2 * i + 1) for i in range(1, 2**n)}
    prog = "sg(x, x) :- node(x).\nsg(x, y) :- par(xp, x), sg(xp, yp), par(yp, y).\n"
    nodes = {(i,) for i in range(1, 2 ** (n + 1))}
    out = run(prog, {"par": edges, "node": nodes})
    depth = lambda i: i.bit_length()  # noqa: E731
    assert out["sg"] == {(a, b) for (a,) in nodes for (b,) in nodes if depth(a) == depth(b)}


def test_semi_naive_uses_a_delta_for_every_recursive_atom():
    # ab(x) needs a(x), known from the start, and b(x), which grows one step per round through
    # ab itself: new ab facts come from a new b fact joined with an old a fact
    prog = (
        "a(x) :- all(x).\na(x) :- ab(x).\n"
        "b(x) :- start(x).\nb(y) :- ab(x), e(x, y).\n"
        "ab(x) :- a(x), b(x).\n"
    )
    nodes = {(i,) for i in range(1, 6)}
    out = run(prog, {"all": nodes, "start": {(1,)}, "e": {(i, i + 1) for i in range(1, 5)}})
    assert out["ab"] == nodes and out["b"] == nodes and out["a"] == nodes
