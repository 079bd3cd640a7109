"""selp topk / explain / query / trees through real processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.cli import selp
from helpers.paths import TRADE

P2 = "dealsWith(Cuba, *) // exports(Cuba, tobacco)"
BASE = [str(TRADE / "trade.dl"), "--db", str(TRADE / "db"), "--engine", "local"]


def _weights(doc: dict, args: list[str]) -> list:
    for r in doc["results"]:
        if r["fact"]["args"] == args:
            return [t["weight"] for t in r["trees"]]
    raise AssertionError(f"no answer {args}")


def test_topk_json_follows_the_output_contract_and_example_3_11() -> None:
    r = selp("topk", *BASE, "--pattern", P2, "-k", "2", "--format", "json", "-q")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert set(doc) == {"k", "monoid", "pattern", "results"}
    assert (doc["k"], doc["monoid"], doc["pattern"]) == (2, "confidence", P2)
    facts = [(x["fact"]["relation"], x["fact"]["args"]) for x in doc["results"]]
    assert facts == sorted(facts) and all(rel == "dealsWith" and args[0] == "Cuba" for rel, args in facts)
    assert _weights(doc, ["Cuba", "France"]) == pytest.approx([0.4, 0.28])
    best = doc["results"][[a for _, a in facts].index(["Cuba", "France"])]["trees"][0]["tree"]
    assert (best["rule"], best["weight"]) == ("r1", 0.8)

    def leaves(n: dict) -> list:
        return [n] if n["rule"] is None else [x for c in n["children"] for x in leaves(c)]

    assert {"relation": "exports", "args": ["Cuba", "tobacco"], "rule": None, "weight": 1.0, "children": []} in leaves(best)


def test_query_form_text_output_and_saved_dtable(tmp_path: Path) -> None:
    saved = tmp_path / "dt"
    r = selp("query", *BASE, f"TOP 2 {P2} RANK BY confidence", "--save-dtable", str(saved), "--fact", "dealsWith(Cuba, France)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("dealsWith(Cuba, France)\n  #1  weight 0.4\n    dealsWith(Cuba, France)  [r1 0.8]\n    └─ ")
    again = selp("trees", str(saved), "--fact", "dealsWith(Cuba, France)")
    assert again.returncode == 0 and again.stdout == r.stdout
    dot = selp("trees", str(saved), "--format", "dot")
    assert dot.stdout.startswith("digraph topk {") and "dealsWith(Cuba, Mexico) #2 weight 0.28" in dot.stdout


def test_explain_ranks_any_derivation_and_monoids_change_the_order() -> None:
    r = selp("explain", *BASE, "dealsWith(Cuba, France)", "-k", "2", "--format", "json", "-q")
    assert _weights(json.loads(r.stdout), ["Cuba", "France"]) == pytest.approx([0.5, 0.4])
    r = selp("explain", *BASE, "dealsWith(Cuba, France)", "-k", "2", "--monoid", "size", "--format", "json", "-q")
    assert _weights(json.loads(r.stdout), ["Cuba", "France"]) == [1, 2]  # rule occurrences
    tree = json.loads(r.stdout)["results"][0]["trees"][0]["tree"]
    assert tree["weight"] == 1 and [c["weight"] for c in tree["children"]] == [None, None]  # facts weigh nothing
    text = selp("explain", *BASE, "dealsWith(Cuba, France)", "-k", "1", "--monoid", "size", "-q").stdout
    assert "weight 1\n" in text and "[r2 1]" in text and "(fact)" in text and "(fact 0)" not in text


def test_out_file_is_written_and_stdout_is_empty(tmp_path: Path) -> None:
    out = tmp_path / "top.json"
    r = selp("topk", *BASE, "--pattern", P2, "--format", "json", "--out", str(out), "-q")
    assert r.returncode == 0 and r.stdout == ""
    assert json.loads(out.read_text())["k"] == 3


@pytest.mark.parametrize(
    "args, expected",
    [
        (["topk", *BASE, "--pattern", P2, "--monoid", "nope"], "error: unknown monoid 'nope'"),
        (["query", *BASE, "TOP 2 dealsWith(Cuba RANK BY size"], "error: query:1:21: syntax error"),
        (["query", *BASE, "dealsWith RANK BY size"], "error: query: expected 'TOP <k> <pattern> RANK BY <monoid>'"),
        (["explain", *BASE, "dealsWith(Cuba, France) / imports"], "error: fact: expected one atom"),
        (["trees", "/nonexistent/dt"], "error: /nonexistent/dt: not a saved DTable"),
        (["topk", *BASE, "--pattern", P2, "--monoid", "access"], "error: rule r1: weight '0.8' is not valid for monoid access"),
    ],
)
def test_user_errors_are_one_line(args: list[str], expected: str) -> None:
    r = selp(*args)
    assert r.returncode == 1, r.stdout
    assert r.stderr.strip().startswith(expected), r.stderr
    assert "Traceback" not in r.stderr


def test_json_and_text_print_the_same_digits_of_a_weight(tmp_path: Path) -> None:
    """0.8 x 0.69255 is 0.5540400000000001 in binary floating point: both renderings say 0.55404."""
    prog = tmp_path / "p.dl"
    prog.write_text("r1 (0.8): q(x) :- e(x).\n(0.69255): e(1).\n")
    j = json.loads(selp("explain", str(prog), "q(1)", "-k", "1", "--format", "json", "-q").stdout)
    assert j["results"][0]["trees"][0]["weight"] == 0.55404
    assert "#1  weight 0.55404\n" in selp("explain", str(prog), "q(1)", "-k", "1", "-q").stdout


def test_explaining_a_base_fact_prints_its_leaf_without_a_warning() -> None:
    r = selp("explain", *BASE, "exports(Cuba, tobacco)", "-k", "1")
    assert r.returncode == 0 and "exports(Cuba, tobacco)  (fact 1)" in r.stdout
    assert "matches no tree" not in r.stderr and "EDB" not in r.stderr


def test_format_svg_draws_the_trees_without_graphviz() -> None:
    import xml.etree.ElementTree as ET

    r = selp("explain", *BASE, "dealsWith(Cuba, France)", "-k", "2", "--format", "svg", "-q")
    assert r.returncode == 0, r.stderr
    doc = ET.fromstring(r.stdout)
    texts = [t.text for t in doc.iter("{http://www.w3.org/2000/svg}text")]
    assert "dealsWith(Cuba, France)  #1  weight 0.5" in texts and "dealsWith(Cuba, France)  #2  weight 0.4" in texts
    assert "exports(Cuba, tobacco)  (fact 1)" in texts


@pytest.mark.spark
def test_a_spark_run_prints_no_jvm_log_unless_asked() -> None:
    """Spark's WARN/ERROR lines (loopback hostname, accumulator errors) stay off a successful run."""
    spark_base = [str(TRADE / "trade.dl"), "--db", str(TRADE / "db"), "--engine", "spark"]
    r = selp("eval", *spark_base, "-q", env={"SELP_SPARK_LOG": ""})
    assert r.returncode == 0 and r.stdout.startswith("dealsWith  9")
    noise = [line for line in r.stderr.splitlines() if " WARN " in line or " ERROR " in line or "log level" in line]
    assert noise == []
    bad = selp("eval", *spark_base, "-q", env={"SELP_SPARK_LOG": "loud"})
    assert bad.returncode == 1 and bad.stderr.strip().endswith("SELP_SPARK_LOG='loud' is not a log level (one of off, fatal, error, warn, info, debug, trace)")


def test_verbose_is_read_before_or_after_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """``-v`` raises Spark's log level to warn (read when a session starts), wherever it is written."""
    from click.testing import CliRunner

    from selp.cli import main
    from selp.engines.spark_session import LOG_ENV, spark_log_level

    for args in (["-v", "eval", *BASE], ["eval", *BASE, "-v"], ["eval", *BASE, "--verbose"]):
        monkeypatch.delenv(LOG_ENV, raising=False)
        assert spark_log_level() == "error"
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, r.output
        assert spark_log_level() == "warn"
