"""The partition-local Spark DTable (selp.topk.spark_partitioned): a decomposable component's
top-k computed inside each partition by DuckDB and the compiled kernel gives the embedded
engine's rankings, and the Spark global rounds' entries -- origins included, so the saved
DTable's pointers and trees are the same."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from helpers.topk import ranking, write_db
from selp.database import load_database
from selp.language import parse_program
from selp.language.pattern_parser import parse_pattern
from selp.language.validate import analyze
from selp.topk.api import topk
from selp.topk.monoid import get_monoid
from selp.topk.spark import run_topk_spark
from selp.topk.task import make_task

PATH = """
.decl edge(a: int, b: int)
r1 (0.9): path(x, y) :- edge(x, y).
r2 (0.8): path(x, z) :- edge(x, y), path(y, z).
"""

# left-recursive, reading a keyed input (link: the decomposition variable at column 0), a
# comparison, a negated lower relation and a Skolem term off the decomposition position
MIXED = """
.decl edge(a: int, b: int)
.decl blocked(a: int)
.decl link(a: int, b: int)
r1 (0.9): reach(x, y) :- edge(x, y).
r2 (0.8): reach(x, z) :- reach(x, y), edge(y, z), not blocked(z).
r3 (0.6): reach(x, z) :- reach(x, y), link(x, z), y < z.
r4 (0.7): tag(x, f(x, y)) :- reach(x, y).
r5 (0.5): tag(x, z) :- tag(x, y), edge(y, z).
"""


def _graph(db: Path, seed: int, nodes: int = 14, edges: int = 30, monoid: str = "confidence") -> None:
    rng = random.Random(seed)
    pairs: set[tuple[int, int]] = set()
    while len(pairs) < edges:
        a, b = rng.randrange(nodes), rng.randrange(nodes)
        if a != b:
            pairs.add((a, b))
    weights = ["0.5", "0.6", "0.7", "0.8", "0.9", "1"] if monoid == "confidence" else ["0", "0.5", "1", "2"]
    db.mkdir(parents=True, exist_ok=True)
    (db / "edge.csv").write_text("a,b,_weight\n" + "".join(f"{a},{b},{rng.choice(weights)}\n" for a, b in sorted(pairs)))
    (db / "blocked.csv").write_text("a\n" + "".join(f"{x}\n" for x in range(0, nodes, 5)))
    (db / "link.csv").write_text("a,b,_weight\n" + "".join(f"{x},{(x * 7 + 3) % nodes},{rng.choice(weights)}\n" for x in range(nodes)))


def _entries(table) -> dict:
    """Per answer: (weight, size, origin) of its trees in rank order."""
    return {fact: [(round(e.weight, 9), e.size, e.origin) for e in es] for fact, es in table.answers().items()}


def _untied(entries: dict) -> dict:
    """The entries whose (weight, size) no other entry of the fact shares: among equal keys the
    kernel breaks ties on the origin as well as it can (see selp.topk.kernel), the global rounds
    exactly, so only these are compared origin for origin."""
    out = {}
    for fact, es in entries.items():
        keys = [(w, s) for w, s, _ in es]
        out[fact] = [e for e in es if keys.count(e[:2]) == 1 and e is not es[-1]]
    return out


def _run(spark, task, db: Path, local: bool):
    spark.conf.set("spark.selp.partitionLocal", "true" if local else "false")
    try:
        result = run_topk_spark(task, str(db), spark)
        try:
            return result.to_dtable(), result.plan
        finally:
            result.close()
    finally:
        spark.conf.unset("spark.selp.partitionLocal")


@pytest.mark.parametrize(
    "program, pattern, k, monoid, seed",
    [
        (PATH, "path(*, *)", 3, "confidence", 1),
        (PATH, "path(*, *)", 1, "cost", 2),
        (PATH, "path // edge", 2, "confidence", 3),
        (PATH, "path(*, *)[/ path(*, *), / edge(*, *)]", 3, "confidence", 4),
        (MIXED, "tag(*, *)", 3, "confidence", 5),
        (MIXED, "reach(*, *)", 2, "size", 6),
    ],
)
def test_partition_local_dtable_equals_embedded_and_global_rounds(spark, tmp_path, program, pattern, k, monoid, seed):
    db = tmp_path / "db"
    _graph(db, seed, monoid=monoid)
    analysis = analyze(parse_program(program))
    task = make_task(analysis, load_database(analysis, db).types, get_monoid(monoid), k, parse_pattern(pattern), pattern)
    local, plan = _run(spark, task, db, True)
    assert any(step["mode"] == "partition-local" for step in plan), plan
    embedded = topk(analysis, str(db), pattern, k, monoid, engine="embedded")
    sizes = monoid != "access"
    assert ranking(local.answers(), sizes) == ranking(embedded.answers(), sizes)
    assert local.answers()  # the case is not vacuous
    global_rounds, plan = _run(spark, task, db, False)
    assert all(step["mode"] != "partition-local" for step in plan)
    assert _untied(_entries(local)) == _untied(_entries(global_rounds))


def test_plan_says_why_a_component_runs_in_global_rounds(spark, tmp_path):
    db = tmp_path / "db"
    _graph(db, 7)
    program = PATH + "r3 (0.5): path(x, z) :- path(x, y), path(y, z).\n"
    analysis = analyze(parse_program(program))
    task = make_task(analysis, load_database(analysis, db).types, get_monoid("confidence"), 2, parse_pattern("path(*, *)"), "path(*, *)")
    result = run_topk_spark(task, str(db), spark)
    try:
        (step,) = [s for s in result.plan if "path" in s["relations"]]
        assert step["mode"] == "global rounds" and "nonlinear" in step["reason"]
    finally:
        result.close()


def test_saved_partition_local_dtable_answers_as_computed(spark, tmp_path):
    """Child pointers made in the partitions (fact keys, origins) lead to entries: the saved
    DTable gives back exactly the trees the run collected."""
    from selp.topk.dtable import load_dtable

    db = tmp_path / "db"
    _graph(db, 8)
    analysis = analyze(parse_program(PATH))
    task = make_task(analysis, load_database(analysis, db).types, get_monoid("confidence"), 3, parse_pattern("path(*, *)"), "path(*, *)")
    result = run_topk_spark(task, str(db), spark)
    try:
        assert any(s["mode"] == "partition-local" for s in result.plan)
        collected = _entries(result.to_dtable())
        result.save(tmp_path / "dtable")
        assert result.extra_entries == 0  # the kernel's entries are final: nothing was pushed out
    finally:
        result.close()
    assert _entries(load_dtable(tmp_path / "dtable")) == collected


def test_topk_command_prints_how_each_recursive_component_ran(spark, tmp_path):
    """``selp topk --engine spark`` says which components got a partition-local DTable and
    which ran in global rounds (and why), as ``selp eval`` does, and answers as the embedded engine."""
    from click.testing import CliRunner

    from selp.cli import main

    db = tmp_path / "db"
    _graph(db, 9)
    prog = tmp_path / "p.dl"
    prog.write_text(PATH + "r3 (0.7): far(x, y) :- path(x, y).\nr4 (0.6): far(x, z) :- far(x, y), far(y, z).\n")
    common = ["topk", str(prog), "--db", str(db), "-k", "2", "--pattern", "far(*, *)", "--format", "json"]
    r = CliRunner().invoke(main, [*common, "--engine", "spark", "--master", "local[2]"])
    assert r.exit_code == 0, r.output
    plan = [line for line in r.stderr.splitlines() if line.startswith("  plan:")]
    assert len(plan) == 2, r.stderr
    assert "[path] partition-local on position 1 (" in plan[0]
    assert plan[0].endswith(", ranked component by component")  # the static path in each partition
    assert "[far] global rounds: " in plan[1] and "nonlinear" in plan[1]
    embedded = CliRunner().invoke(main, [*common, "--engine", "embedded"])
    assert embedded.exit_code == 0 and not [line for line in embedded.stderr.splitlines() if "plan:" in line]
    assert _weights(r.stdout) == _weights(embedded.stdout)


def _weights(text: str) -> dict:
    """Per answer of a ``--format json`` output: its trees' weights, best first."""
    import json

    doc = json.loads(text)
    return {(a["fact"]["relation"], tuple(a["fact"]["args"])): [round(t["weight"], 9) for t in a["trees"]] for a in doc["results"]}


def test_reading_a_few_facts_unpacks_only_theirs(spark, tmp_path):
    """The trees of one fact, read from a partition-local DTable larger than the collect limit,
    are those of the whole DTable, and reading them does not unpack every entry (the part's own
    rows stay uncomputed until a reader needs all of them)."""
    from selp.engines.spark_frames import computed
    from selp.topk.spark_dtable import COLLECT_ROWS_CONF

    db = tmp_path / "db"
    _graph(db, 9, nodes=20, edges=45)
    analysis = analyze(parse_program(PATH))
    task = make_task(analysis, load_database(analysis, db).types, get_monoid("confidence"), 3, parse_pattern("path(*, *)"), "path(*, *)")
    result = run_topk_spark(task, str(db), spark)
    spark.conf.set(COLLECT_ROWS_CONF, "10")
    try:
        (part,) = result.ranked_parts
        embedded = topk(analysis, str(db), "path(*, *)", 3, "confidence", engine="embedded").answers()
        fact = max(embedded, key=lambda f: (len(embedded[f]), f))
        few = result.to_dtable([fact])
        assert not computed(part)
        whole = _entries(result.to_dtable())
        assert computed(part)  # a reader of every row unpacks (and keeps) them all
        got = _entries(few)  # the fact, and the facts its trees reach
        assert got[fact] == whole[fact] and len(whole[fact]) == 3
        assert all(whole[f] == es for f, es in got.items()) and 1 < len(got) < len(whole)
    finally:
        spark.conf.unset(COLLECT_ROWS_CONF)
        result.close()


# right-recursive over a lower relation that no fact reaches (``gone`` is always empty): it is
# broadcast with no entries, and the partition's DuckDB must still see it (issue 19: a
# randomised run failed with "Table with name i:gone does not exist")
EMPTY_INPUT = """
.decl edge(a: int, b: int)
r1 (0.9): gone(x, y) :- edge(x, y), not edge(x, _).
r2 (0.9): path(x, y) :- edge(x, y).
r3 (0.8): path(x, z) :- edge(x, y), path(y, z).
r4 (0.7): path(x, z) :- gone(x, y), path(y, z).
"""


def test_a_recursive_rule_reading_an_empty_relation_ranks_like_the_embedded_engine(spark, tmp_path):
    db = tmp_path / "db"
    _graph(db, 9)
    analysis = analyze(parse_program(EMPTY_INPUT))
    task = make_task(analysis, load_database(analysis, db).types, get_monoid("confidence"), 2, parse_pattern("path(*, *)"), "path(*, *)")
    local, plan = _run(spark, task, db, True)
    (step,) = [s for s in plan if "path" in s["relations"]]
    assert step["mode"] == "partition-local" and "gone" in step["broadcast"], step
    embedded = topk(analysis, str(db), "path(*, *)", 2, "confidence", engine="embedded")
    assert local.answers() and ranking(local.answers(), True) == ranking(embedded.answers(), True)


def test_partitions_rank_component_by_component_as_the_embedded_engine(spark, tmp_path):
    """A random decomposable program (left- or right-recursive over two EDB relations, random
    rule weights, ties) at k = 3: the plan says each partition ranked component by component
    (selp.topk.component_static), and the rankings are the embedded engine's."""
    rng = random.Random(19)
    w = [rng.choice(["0.5", "0.7", "0.9"]) for _ in range(3)]
    if rng.random() < 0.5:
        rules = f"r2 ({w[1]}): path(x, z) :- edge(x, y), path(y, z).\nr3 ({w[2]}): path(x, z) :- link(x, y), path(y, z).\n"
        position = 1
    else:
        rules = f"r2 ({w[1]}): path(x, z) :- path(x, y), edge(y, z).\nr3 ({w[2]}): path(x, z) :- path(x, y), link(y, z).\n"
        position = 0
    program = f".decl edge(a: int, b: int)\n.decl link(a: int, b: int)\nr1 ({w[0]}): path(x, y) :- edge(x, y).\n{rules}"
    db = tmp_path / "db"
    _graph(db, rng.randrange(1000), nodes=16, edges=34)
    analysis = analyze(parse_program(program))
    task = make_task(analysis, load_database(analysis, db).types, get_monoid("confidence"), 3, parse_pattern("path(*, *)"), "path(*, *)")
    local, plan = _run(spark, task, db, True)
    (step,) = [s for s in plan if "path" in s["relations"]]
    assert step["mode"] == "partition-local" and step["position"] == position, step
    assert step["ranking"] == "component by component", step
    embedded = topk(analysis, str(db), "path(*, *)", 3, "confidence", engine="embedded")
    assert local.answers() and ranking(local.answers(), True) == ranking(embedded.answers(), True)
    assert max(len(es) for es in local.answers().values()) == 3  # facts with three trees: k matters


# the TC benchmark program: the symmetry rule r2 passes no position, so the component
# decomposes by the connected components of the edge values (selp.engines.decompose)
SYMMETRIC = """
.decl edge(a: int, b: int)
r1 (0.9): tc(x, y) :- edge(x, y).
r2 (0.8): tc(x, y) :- tc(y, x).
r3 (0.7): tc(x, y) :- tc(x, z), edge(z, y).
"""


def _islands(db: Path, seed: int) -> None:
    """Directed random edges inside four islands of 6 nodes (several value components)."""
    rng = random.Random(seed)
    pairs = {(a, b) for a, b in ((rng.randrange(6) + 6 * i, rng.randrange(6) + 6 * i) for i in range(4) for _ in range(7)) if a != b}
    db.mkdir(parents=True, exist_ok=True)
    (db / "edge.csv").write_text("a,b,_weight\n" + "".join(f"{a},{b},{rng.choice(['0.5', '0.7', '0.9', '1'])}\n" for a, b in sorted(pairs)))


@pytest.mark.parametrize("k, seed", [(1, 11), (3, 12)])
def test_symmetry_rule_runs_partition_local_on_value_components(spark, tmp_path, k, seed):
    from selp.engines.result import plan_line, run_local
    from selp.engines.spark import run_spark

    db = tmp_path / "db"
    _islands(db, seed)
    analysis = analyze(parse_program(SYMMETRIC))
    ref = run_local(analysis, db)
    ev = run_spark(analysis, db, spark)
    try:
        (step,) = [s for s in ev.plan if s["relations"] == ["tc"]]
        assert step["mode"] == "partition-local" and step["decomposition"] == "value components", step
        assert plan_line(step).startswith("  plan: stratum 0 [tc] partition-local on value components (")
        assert ev.rows("tc") == ref.rows("tc") and ev.count("tc") == ref.count("tc") > 0
        assert ev.iterations == ref.iterations
    finally:
        ev.close()
    task = make_task(analysis, load_database(analysis, db).types, get_monoid("confidence"), k, parse_pattern("tc(*, *)"), "tc(*, *)")
    local, plan = _run(spark, task, db, True)
    # ranked group by group: a partition's facts grouped by the classes of their values
    assert any(s.get("decomposition") == "value components" and s.get("ranking") == "component by component" for s in plan), plan
    embedded = topk(analysis, str(db), "tc(*, *)", k, "confidence", engine="embedded")
    assert ranking(local.answers(), True) == ranking(embedded.answers(), True)
    assert local.answers()
    global_rounds, _ = _run(spark, task, db, False)
    assert _untied(_entries(local)) == _untied(_entries(global_rounds))


def test_blob_codec_setting_changes_the_bytes_not_the_dtable(spark, tmp_path):
    from selp.errors import SelpError

    db = tmp_path / "db"
    _graph(db, 8)
    analysis = analyze(parse_program(PATH))
    task = make_task(analysis, load_database(analysis, db).types, get_monoid("confidence"), 3, parse_pattern("path(*, *)"), "path(*, *)")
    got = {}
    for codec in ("none", "lz4", "zstd"):
        spark.conf.set("spark.selp.partitionLocal.blobCodec", codec)
        try:
            got[codec] = _entries(_run(spark, task, db, True)[0])
        finally:
            spark.conf.unset("spark.selp.partitionLocal.blobCodec")
    assert got["none"] and got["none"] == got["lz4"] == got["zstd"]
    spark.conf.set("spark.selp.partitionLocal.blobCodec", "gzip9")
    try:
        with pytest.raises(SelpError, match=r"spark.selp.partitionLocal.blobCodec='gzip9': expected one of zstd, lz4, none"):
            run_topk_spark(task, str(db), spark)
    finally:
        spark.conf.unset("spark.selp.partitionLocal.blobCodec")


def test_kbest_loop_setting_ranks_alike_and_a_bad_value_is_named(spark, tmp_path):
    """``spark.selp.partitionLocal.kbestLoop``: the recursive enumeration (the default) and the
    global loop give every answer the same ranking, untied trees origin for origin."""
    from selp.errors import SelpError

    db = tmp_path / "db"
    _graph(db, 9)
    analysis = analyze(parse_program(PATH))
    task = make_task(analysis, load_database(analysis, db).types, get_monoid("confidence"), 4, parse_pattern("path(*, *)"), "path(*, *)")
    got = {}
    for loop in ("global", "recursive"):
        spark.conf.set("spark.selp.partitionLocal.kbestLoop", loop)
        try:
            got[loop] = _entries(_run(spark, task, db, True)[0])
        finally:
            spark.conf.unset("spark.selp.partitionLocal.kbestLoop")
    assert any(len(es) == 4 for es in got["global"].values())  # not vacuous: facts with k trees
    assert {f: [e[:2] for e in es] for f, es in got["global"].items()} == {f: [e[:2] for e in es] for f, es in got["recursive"].items()}
    assert _untied(got["global"]) == _untied(got["recursive"])
    spark.conf.set("spark.selp.partitionLocal.kbestLoop", "fastest")
    try:
        with pytest.raises(SelpError, match=r"spark.selp.partitionLocal.kbestLoop='fastest': expected one of recursive, global"):
            run_topk_spark(task, str(db), spark)
    finally:
        spark.conf.unset("spark.selp.partitionLocal.kbestLoop")


HEAD_CONSTANT = """
.decl e0(c1: int, c2: int)
r1 (2): p0(x, x) :- e0(x, -2).
r2 (2): p0(1, y) :- p0(x, y).
"""


def test_a_recursive_rule_with_a_head_constant_ranks_as_embedded(spark, tmp_path):
    """A constant in a recursive rule's head is coded by a query on the partition's DuckDB
    connection, which must not leave it unusable (found by the aggregate property test: the
    partition failed reading its facts' arguments)."""
    analysis = analyze(parse_program(HEAD_CONSTANT))
    write_db(tmp_path, analysis, {"e0": {(-2, -2), (0, -2), (0, 1), (1, -2)}}, {"e0": {(-2, -2): "0.5", (0, -2): "0"}})
    task = make_task(analysis, load_database(analysis, tmp_path).types, get_monoid("cost"), 3, parse_pattern("p0(*, *)"), "p0(*, *)")
    local, plan = _run(spark, task, tmp_path, True)
    assert any("partition-local" in str(s) or s.get("decomposition") for s in plan), plan
    embedded = topk(analysis, str(tmp_path), "p0(*, *)", 3, "cost", engine="embedded")
    assert ranking(local.answers(), True) == ranking(embedded.answers(), True)
    assert any(len(es) > 1 for es in local.answers().values())  # not vacuous: several trees of a fact
