"""DuckDB Z-relations: an unchanged copy shares its source's table (no rows copied), and the
sharing never lets a later change of one relation show through the other."""

from __future__ import annotations

from selp.adapt.zduck import DuckZ
from selp.adapt.zprogram import lower
from selp.language.parser import parse_program


def _copy(eng: DuckZ, target: str, source: str) -> None:
    rule = parse_program(f"{target}(X, Y) :- {source}(X, Y).").rules[0]
    eng.define(target, 2, [lower(rule, {source: 2})])


def test_a_copy_shares_the_table_and_survives_the_source_changing() -> None:
    eng = DuckZ()
    eng.put("q", 2, {("1", "a"): 2, ("2", "b"): -1})
    _copy(eng, "q@new", "q")
    assert eng.table["q@new"] == eng.table["q"]  # by reference: no second table
    eng.put("q", 2, {("9", "z"): 1})  # the source is replaced: the copy keeps the old rows
    assert eng.get("q@new") == {("1", "a"): 2, ("2", "b"): -1}
    assert eng.get("q") == {("9", "z"): 1}
    eng.drop("q")
    assert eng.get("q@new") == {("1", "a"): 2, ("2", "b"): -1}


def test_renaming_a_copy_over_its_source_and_redefining_it_keeps_values_apart() -> None:
    eng = DuckZ()
    eng.put("q", 2, {("1", "a"): 1})
    _copy(eng, "q@new", "q")
    _copy(eng, "r", "q")
    eng.rename("q@new", "q")  # commit: the old name now holds the (shared) new instance
    rule = parse_program('q(X, Y) :- r(X, Y).\n-q(X, Y) :- r(X, Y), X = 1.').rules
    eng.define("q", 2, [lower(r, {"r": 2}) for r in rule])  # q redefined from its own copy
    assert eng.get("q") == {}
    assert eng.get("r") == {("1", "a"): 1}
    assert eng.same("r", "r") and not eng.same("q", "r")
    assert sorted(eng.names()) == ["q", "r"]
    # the tables no relation refers to are gone
    stored = {row[0] for row in eng.con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert stored == {*eng.table["q"], *eng.table["r"]}


def test_put_after_statistics_and_comparison() -> None:
    """Reading statistics or comparing relations leaves no open result that would refuse the
    next bulk load (the CDSS stores a relation right after asking a delta's statistics)."""
    eng = DuckZ()
    eng.put("a", 1, {("1",): 1, ("2",): 3})
    assert eng.stats("a").rows == 2
    eng.put("b", 1, {("1",): 1})
    assert not eng.same("a", "b")
    eng.put("c", 1, {("2",): 3})
    assert eng.get("c") == {("2",): 3}


def test_old_instance_plus_a_remainder_is_merged_with_exact_counts() -> None:
    """A plan that keeps a stored relation as it is (``q@new :- q.`` plus other rules) is summed
    by merging the other rules into the stored rows, not by re-aggregating them: counts that
    cancel disappear, new tuples appear, the rest keep their counts -- as the oracle says."""
    from selp.adapt.zref import ReferenceZ

    text = "q@new(X, Y) :- q(X, Y).\nq@new(X, Y) :- d(X, Y).\n-q@new(X, Y) :- e(X, Y), d(X, Y).\nq@new(X, X) :- d(X, Y), e(X, Y)."
    rules = parse_program(text).rules
    arities = {"q": 2, "d": 2, "e": 2}
    got = {}
    for eng in (DuckZ(), ReferenceZ()):
        eng.put("q", 2, {("1", "a"): 2, ("2", "b"): 1, ("3", "c"): 5})
        eng.put("d", 2, {("1", "a"): -2, ("4", "d"): 3, ("2", "b"): 1})
        eng.put("e", 2, {("2", "b"): 1})
        eng.define("q@new", 2, [lower(r, arities) for r in rules])
        got[type(eng).__name__] = eng.get("q@new")
    # (1,a): 2-2 = 0 gone; (2,b): 1+1-1 = 1 plus q@new(2,2) from the last rule; (3,c) kept; (4,d) new
    assert got["DuckZ"] == got["ReferenceZ"] == {("2", "b"): 1, ("3", "c"): 5, ("4", "d"): 3, ("2", "2"): 1}
    assert got["DuckZ"] != {}  # the old rows are kept through the merge, not lost with the join


def test_keeping_the_old_instance_adds_a_segment_and_never_copies_it() -> None:
    """A plan ``q@new :- q`` plus a remainder stores the remainder's sum as one more segment
    after ``q``'s own table (the old rows are not read or copied), reads as the summed
    Z-relation (a tuple in both segments once, a net count of 0 gone), and a relation of more
    than MAX_SEGMENTS segments is compacted into one table with the same rows."""
    from selp.adapt.zduck import MAX_SEGMENTS

    eng = DuckZ()
    eng.put("q", 2, {("1", "a"): 2, ("2", "b"): 1})
    eng.put("d", 2, {("1", "a"): -2, ("3", "c"): 4})
    rules = parse_program("q@new(X, Y) :- q(X, Y).\nq@new(X, Y) :- d(X, Y).").rules
    eng.define("q@new", 2, [lower(r, {"q": 2, "d": 2}) for r in rules])
    assert len(eng.table["q@new"]) == 2 and eng.table["q@new"][0] == eng.table["q"][0]
    assert eng.get("q@new") == {("2", "b"): 1, ("3", "c"): 4}
    assert eng.stats("q@new").rows == 2  # from the segments: (1, a)'s negative row cancels its old one
    eng.put("r", 2, {("2", "b"): 1, ("3", "c"): 4})
    assert eng.same("q@new", "r")
    expected = dict(eng.get("q@new"))
    prev, lengths = "q@new", []
    for i in range(MAX_SEGMENTS + 1):  # each generation keeps the previous one and adds a tuple
        eng.put(f"e{i}", 2, {(str(10 + i), "z"): 1})
        step = parse_program(f"g{i}(X, Y) :- {prev}(X, Y).\ng{i}(X, Y) :- e{i}(X, Y).").rules
        eng.define(f"g{i}", 2, [lower(r, {prev: 2, f"e{i}": 2}) for r in step])
        expected[(str(10 + i), "z")] = 1
        lengths.append(len(eng.table[f"g{i}"]))
        assert lengths[-1] <= MAX_SEGMENTS
        assert eng.get(f"g{i}") == expected
        prev = f"g{i}"
    assert 1 in lengths  # compacted once on the way (and kept adding segments after)
    # joining a segmented relation multiplies and sums counts as if it were summed
    join = parse_program("j(X) :- q@new(X, Y), r(X, Y).").rules
    eng.define("j", 1, [lower(r, {"q@new": 2, "r": 2}) for r in join])
    assert eng.get("j") == {("2",): 1, ("3",): 16}


def test_count_is_exact_where_segment_statistics_estimate() -> None:
    """A relation kept as the old segment plus a remainder that re-adds an old tuple: the
    statistics estimate counts that tuple twice (the segments' rows, no scan), ``count`` sums
    the segments and gives the tuples a user sees."""
    eng = DuckZ()
    eng.put("q", 2, {("1", "a"): 1, ("2", "b"): 1})
    eng.put("d", 2, {("1", "a"): 2, ("3", "c"): 1})
    rules = parse_program("q@new(X, Y) :- q(X, Y).\nq@new(X, Y) :- d(X, Y).").rules
    eng.define("q@new", 2, [lower(r, {"q": 2, "d": 2}) for r in rules])
    assert eng.get("q@new") == {("1", "a"): 3, ("2", "b"): 1, ("3", "c"): 1}
    assert eng.count("q@new") == 3
    assert eng.stats("q@new").rows == 4  # an estimate: (1, a) is in both segments


def test_a_kept_old_instance_costs_only_its_remainder_on_duckdb() -> None:
    """The cost of ``q@new :- q`` plus a remainder: on an engine that keeps the copied relation's
    tables as segments (DuckDB) the copy costs its rule only and the remainder is stored
    unsummed, so the plan costs the remainder's joins plus that; charged as a read and sum of
    ``q`` otherwise (Spark sums every rule)."""
    from selp.adapt.cost import RULE_OVERHEAD, cq_cost, query_cost
    from selp.adapt.rules import make_cq
    from selp.adapt.zprogram import Stats
    from selp.language.ast import Var

    x, y = Var("X"), Var("Y")
    copy = make_cq((x, y), [("q", (x, y))])
    rest = make_cq((x, y), [("d", (x, y)), ("e", (x, y))])
    stats = {"q": Stats(100_000, (100_000, 50)), "d": Stats(1_000, (1_000, 10)), "e": Stats(500, (500, 10))}.__getitem__
    assert DuckZ.shares_copies
    remainder = query_cost({rest: 1}, stats)
    joins, rows = cq_cost(rest, stats)
    assert remainder == joins + rows + RULE_OVERHEAD  # alone, its result is summed
    assert query_cost({copy: 1, rest: 1}, stats, shared_copies=True) == joins + 2 * RULE_OVERHEAD
    assert query_cost({copy: 1, rest: 1}, stats) > remainder + 100_000
    # a copy with coefficient 2 (a rule repeated) is kept as well, its segment counted twice
    assert query_cost({copy: 2, rest: 1}, stats, shared_copies=True) == joins + 2 * RULE_OVERHEAD


def test_copies_with_coefficients_are_bookkeeping_and_read_as_the_oracle() -> None:
    """A plan's copies of stored relations with any coefficient -- the old instance kept, a rule
    repeated (2·q), a dropped rule whose rows are one of the old instance's segments (-s) --
    write no table: the segments' coefficients add up and a segment reaching 0 is dropped. The
    relations read, count and compare as the reference engine computes them, and as readers of
    a join."""
    from selp.adapt.zref import ReferenceZ

    arities = {"s": 2, "t": 2, "q": 2, "d": 2}
    old = "q(X, Y) :- s(X, Y).\nq(X, Y) :- t(X, Y), d(X, Y)."  # s's table is one of q's segments
    plans = {
        "cancel": "n(X, Y) :- q(X, Y).\n-n(X, Y) :- s(X, Y).",  # rule q :- s dropped: its segment goes
        "twice": "n(X, Y) :- q(X, Y).\nn(X, Y) :- q(X, Y).",  # a repeated rule: coefficient 2
        "both": "n(X, Y) :- q(X, Y).\nn(X, Y) :- q(X, Y).\n-n(X, Y) :- s(X, Y).\nn(X, Y) :- d(X, Y), t(X, Y).",
    }
    got: dict[str, dict] = {}
    for eng in (DuckZ(), ReferenceZ()):
        eng.put("s", 2, {("1", "a"): 2, ("2", "b"): 1})
        eng.put("t", 2, {("1", "a"): 1, ("3", "c"): 5})
        eng.put("d", 2, {("1", "a"): -1, ("3", "c"): 1, ("4", "d"): 2})
        eng.define("q", 2, [lower(r, arities) for r in parse_program(old).rules])
        for case, text in plans.items():
            eng.define(f"n_{case}", 2, [lower(r.__class__(f"n_{case}", r.head.__class__(f"n_{case}", r.head.args, r.head.negated), r.body, named=False), arities, -1 if r.head.negated else 1)
                                        for r in parse_program(text).rules])
            got.setdefault(case, {})[type(eng).__name__] = eng.get(f"n_{case}")
        if isinstance(eng, DuckZ):
            stored = {row[0] for row in eng.con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
            q_tables = set(eng.table["q"])
            assert eng.table["n_cancel"] == tuple(t for t in eng.table["q"] if t not in eng.table["s"])  # no new table
            assert eng.table["n_twice"] == eng.table["q"] and eng.coef["n_twice"] == (2, 2)
            # 2·q - s + d·t: s's segment once, q's other twice, the join's derivations a new table
            assert eng.table["n_both"][:2] == eng.table["q"] and eng.coef["n_both"] == (1, 2, 1)
            assert eng.table["n_both"][2] not in q_tables
            assert stored == {t for n in eng.names() for t in eng.table[n]}
            assert eng.count("n_both") == len(eng.get("n_both"))
            eng.define("j", 1, [lower(r, {"n_both": 2, "t": 2}) for r in parse_program("j(X) :- n_both(X, Y), t(X, Y).").rules])
            got.setdefault("join", {})["DuckZ"] = eng.get("j")
        else:
            eng.define("j", 1, [lower(r, {"n_both": 2, "t": 2}) for r in parse_program("j(X) :- n_both(X, Y), t(X, Y).").rules])
            got.setdefault("join", {})["ReferenceZ"] = eng.get("j")
    for case, by in got.items():
        assert by["DuckZ"] == by["ReferenceZ"], case
    # q = s + t·d: (1,a) 2 + 1·-1 = 1, (2,b) 1, (3,c) 5·1 = 5
    assert got["cancel"]["DuckZ"] == {("1", "a"): -1, ("3", "c"): 5}
    assert got["twice"]["DuckZ"] == {("1", "a"): 2, ("2", "b"): 2, ("3", "c"): 10}
    assert got["both"]["DuckZ"] == {("1", "a"): -1, ("2", "b"): 1, ("3", "c"): 15}


def _memory_mib(eng: DuckZ) -> float:
    ((text,),) = eng.con.execute("SELECT memory_usage FROM pragma_database_size()").fetchall()
    number, unit = text.split()
    return float(number) * {"bytes": 2**-20, "KiB": 2**-10, "MiB": 1.0, "GiB": 2**10}[unit]


def test_the_store_checkpoints_only_when_asked() -> None:
    # DuckDB's automatic checkpoint would land inside whichever view's statement crosses its
    # threshold (a 0.7-1.5 s stall at 300k rows per source): the store's connection has none
    eng = DuckZ()
    ((threshold,),) = eng.con.execute("SELECT current_setting('checkpoint_threshold')").fetchall()
    number, unit = threshold.split()
    assert unit in ("GiB", "TiB", "PiB") and float(number) * {"GiB": 1, "TiB": 2**10, "PiB": 2**20}[unit] >= 100
    eng.put("q", 2, {(str(i), "abcdefghij" + str(i % 7)): 1 + i % 3 for i in range(200_000)})
    before = _memory_mib(eng)
    eng.checkpoint()  # run between pieces of work: compresses what was written
    assert _memory_mib(eng) < before
    assert eng.count("q") == 200_000


def test_a_remainder_is_stored_unsummed_and_read_summed() -> None:
    """A kept old instance's remainder is stored as its derivations (no aggregation: a tuple
    derived twice is two rows, a derivation and its cancellation both stay), and every reader
    -- rows, count, comparison, a join, compaction -- sees the summed Z-relation the oracle
    computes."""
    from selp.adapt.zref import ReferenceZ

    text = ("q@new(X) :- q(X).\nq@new(X) :- d(X, Y).\n-q@new(X) :- d(X, Y), e(Y).\n"
            "j(X, Z) :- q@new(X), d(X, Z).\nk(X) :- q@new(X).\nk(X) :- e(X).")
    rules = parse_program(text).rules
    arities = {"q": 1, "d": 2, "e": 1, "q@new": 1}
    got = {}
    for eng in (DuckZ(), ReferenceZ()):
        eng.put("q", 1, {("1",): 2, ("2",): 1})
        eng.put("d", 2, {("1", "a"): 1, ("1", "b"): 1, ("3", "a"): -1, ("4", "b"): 2})
        eng.put("e", 1, {("a",): 1})
        for head in ("q@new", "j", "k"):
            eng.define(head, 1 if head != "j" else 2, [lower(r, arities) for r in rules if r.head.relation == head])
        got[type(eng).__name__] = {h: eng.get(h) for h in ("q@new", "j", "k")}
        if isinstance(eng, DuckZ):
            kept, remainder = eng.table["q@new"]
            assert kept == eng.table["q"][0]
            # (1,a), (1,b), (3,a), (4,b) derived and (1,a), (3,a) cancelled: six rows, unsummed
            ((rows,),) = eng.con.execute(f'SELECT COUNT(*) FROM "{remainder}"').fetchall()
            assert rows == 6
            assert eng.count("q@new") == 3
            eng.put("expected", 1, {("1",): 3, ("2",): 1, ("4",): 2})
            assert eng.same("q@new", "expected")
    # q@new: 1 -> 2 + 2 - 1 = 3; 2 -> 1; 3 -> -1 + 1 = 0 (gone); 4 -> 2
    assert got["DuckZ"] == got["ReferenceZ"]
    assert got["DuckZ"]["q@new"] == {("1",): 3, ("2",): 1, ("4",): 2}
