"""Access support relations (selp.cdss.proql.asr) on a generated chain, worked out by hand.

The CDSS is ``selp bench proql``'s chain of 6 peers with 5 entries at the leaf P0 only:
mappings m0_1 .. m4_5, each a full mapping joining all of a peer's relations on the key, so each
entry gives one mapping node per mapping (every P_m has 5 rows) and flows to the root P5.

* The chain is branch-free with no local data past P0: one chain m4_5 <- m3_4 <- ... <- m0_1;
  width 3 cuts it into [m4_5, m3_4, m2_3] and [m1_2, m0_1]; each inner ASR has one row per entry.
* The root query's ``<-+ []`` fixpoint: without ASRs the ancestors P4, P3, P2, P1, P0 come one
  per round (5 productive rounds + the round that finds nothing = 6); with the two ASRs P4, P3,
  P2 come in round 2 (the first window in one edge each), P1 and P0 in round 3 -> 3 rounds.
* An outer ASR holds every subpath: 3+2+1 = 6 rows per entry for the first, 2+1 = 3 for the
  second.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from selp.bench.proql import build_store
from selp.cdss.proql.api import spark_query
from selp.cdss.proql.asr import AsrDef, build_asrs, choose_asrs, compute_asr, read_manifest
from selp.cdss.proql.spark_graph import load_epoch_graph
from selp.cdss.store import Store
from selp.cli import main
from selp.gen.proql import generate_proql
from helpers.cdss import cdss_cli, ok

pytestmark = pytest.mark.spark  # every test reads the chain fixture, which starts Spark

WINDOWS = [AsrDef(("m4_5", "m3_4", "m2_3")), AsrDef(("m1_2", "m0_1"))]


def root_query(g, semiring: str = "") -> str:
    body = f"FOR [{g.relations[5][0].name} $x] INCLUDE PATH [$x] <-+ [] RETURN $x"
    return f"EVALUATE {semiring} OF {{ {body} }}" if semiring else body


@pytest.fixture(scope="module")
def chain(tmp_path_factory, spark):
    g = generate_proql("chain", 6, 5, "leaves")
    d, _ = build_store(g, tmp_path_factory.mktemp("asr") / "chain")
    return g, d


def answer(d: Path, q: str, spark, asr: bool):
    r = spark_query(str(d), q, spark=spark, use_asrs=asr)
    rounds = dict(r.stats.rounds)
    return (
        sorted(x[0] for x in r.bindings.collect()),
        sorted(x[0] for x in r.gnodes.collect()),
        {x.node: x.value for x in r.values.collect()},
        rounds["INCLUDE <-+ []"],
        r.asrs_used,
    )


def test_heuristic_picks_the_chain_windows(chain):
    g, d = chain
    with Store.open(d) as st:
        epoch = st.last_exchange().epoch
        assert not (st.epoch_dir(epoch) / "asr").exists()  # exchange created none by itself
        assert choose_asrs(st, epoch, width=3) == WINDOWS
        # width 8 > the chain: one ASR of all five mappings
        assert choose_asrs(st, epoch, width=8) == [AsrDef(("m4_5", "m3_4", "m2_3", "m1_2", "m0_1"))]


def test_same_answers_with_inner_asrs_in_fewer_rounds(chain, spark):
    g, d = chain
    q = root_query(g, "DERIVABILITY")
    bind, nodes, vals, rounds, used = answer(d, q, spark, asr=False)
    assert len(bind) == 5 and all(vals.values()) and rounds == 6 and used == []
    with Store.open(d) as st:
        entries = build_asrs(st, spark, width=3)
    assert [(e["path"], e["kind"], e["rows"]) for e in entries] == [
        (["m4_5", "m3_4", "m2_3"], "inner", 5), (["m1_2", "m0_1"], "inner", 5)
    ]
    bind2, nodes2, vals2, rounds2, used2 = answer(d, q, spark, asr=True)
    assert (bind2, nodes2, vals2) == (bind, nodes, vals)
    assert rounds2 == 3 and used2 == ["asr_inner_m4_5_m3_4_m2_3", "asr_inner_m1_2_m0_1"]


def test_explain_names_the_asrs(chain, spark):
    g, d = chain
    with Store.open(d) as st:
        build_asrs(st, spark, width=3)
    res = CliRunner().invoke(main, ["proql", str(d), root_query(g), "--explain"])
    out = ok(res)
    assert "ASRs used: asr_inner_m4_5_m3_4_m2_3, asr_inner_m1_2_m0_1" in out
    assert "fixpoint INCLUDE <-+ []: 3 round(s)" in out
    res = CliRunner().invoke(main, ["proql", str(d), root_query(g), "--explain", "--no-asr"])
    out = ok(res)
    assert "ASRs used: none" in out and "fixpoint INCLUDE <-+ []: 6 round(s)" in out


def test_outer_asrs_hold_every_subpath_and_replace_their_mappings(chain, spark, tmp_path):
    g, d = chain
    with Store.open(d) as st:
        entries = build_asrs(st, spark, defs=[AsrDef(w.path, "outer") for w in WINDOWS])
    assert [e["rows"] for e in entries] == [30, 15]
    q = root_query(g, "LINEAGE")
    with Store.open(d) as st:  # back to inner for the other tests
        plain = answer(d, q, spark, asr=False)
        outer = answer(d, q, spark, asr=True)
        build_asrs(st, spark, width=3)
    assert outer[:3] == plain[:3] and outer[3] == 3
    # every lineage is the entry's tuples at the leaf P0 (the only local data)
    assert all(all(tok.startswith("R0_") for tok in v) for v in plain[2].values())


def test_exchange_maintains_the_asrs_by_their_deltas(chain, spark, tmp_path):
    g, d = chain
    with Store.open(d) as st:
        build_asrs(st, spark, width=3)
    # insert a sixth entry at P0: one more mapping node per mapping, one more row per ASR
    new = g.fresh_entries(1)[0]
    for r in g.relations[0]:
        (row,) = g.rows(0, r, new)
        f = tmp_path / f"{r.name}.csv"
        f.write_text(",".join(r.columns) + "\n" + ",".join(map(str, row)) + "\n")
        ok(cdss_cli("import", d, "--peer", "P0", "--relation", r.name, f))
    ok(cdss_cli("publish", d, "--peer", "P0"))
    ok(cdss_cli("exchange", d, "--peer", "P5", "--engine", "spark", "--strategy", "provenance", "-q"))

    def check(rows: int) -> None:
        with Store.open(d) as st:
            epoch = st.last_exchange().epoch
            manifest = read_manifest(st.epoch_dir(epoch))
            assert [e["rows"] for e in manifest] == [rows, rows]
            graph = load_epoch_graph(spark, st, epoch)
            for e, w in zip(manifest, WINDOWS):
                stored = spark.read.parquet(str(st.epoch_dir(epoch) / "asr" / f"{e['name']}.parquet"))
                assert sorted(stored.collect()) == sorted(compute_asr(graph, w).collect())  # = recomputed

    check(6)
    # delete it again (all of its tuples at P0): back to one row per original entry
    for r in g.relations[0]:
        (row,) = g.rows(0, r, new)
        ok(cdss_cli("edit", d, "--peer", "P0", f"-{r.name}({', '.join(map(str, row))})"))
    ok(cdss_cli("publish", d, "--peer", "P0"))
    ok(cdss_cli("exchange", d, "--peer", "P5", "--engine", "spark", "--strategy", "provenance", "-q"))
    check(5)
    assert len(answer(d, root_query(g), spark, asr=True)[0]) == 5
