"""The streaming tree writers (selp.topk.flat + selp.topk.render) give today's writers' bytes."""

from __future__ import annotations

import io
import json
import random
import struct

import numpy as np
import pyarrow as pa
import pytest

from selp.cli.root import load_program
from selp.topk import flat as F
from selp.topk import render as R
from selp.topk.api import parse_fact_filter, topk
from selp.topk.monoid import format_weight, tidy_weight
from selp.topk.trees import answers, iter_json, render_text, to_json

TRADE = ("examples/trade/trade.dl", "examples/trade/db")


def _old(table, fmt, fact_filter=None):
    res = answers(table, fact_filter)
    if fmt == "text":
        return render_text(res) if res else "no derivation matches\n"
    return "".join(iter_json(to_json(table, res))) + "\n"


def _new(flat, fmt):
    b = io.BytesIO()
    R.write(flat, fmt, b)
    return b.getvalue().decode("utf-8")


@pytest.mark.parametrize("pattern,k,monoid,fact", [
    ("dealsWith(Cuba, *) // exports(Cuba, tobacco)", 2, "confidence", None),
    ("dealsWith(*, *)", 3, "cost", None),
    ("dealsWith(*, *)", 4, "size", "dealsWith(Cuba, *)"),
    ("dealsWith(*, *) OR exports(*, *)", 2, "min-confidence", None),
])
def test_same_bytes_as_the_python_writers(pattern, k, monoid, fact):
    ff = parse_fact_filter(fact) if fact else None
    table = topk(load_program(TRADE[0]), TRADE[1], pattern, k, monoid, "embedded", "heuristic", None, None,
                 lambda m: None, fact=ff)
    for flat in (F.from_arrays(table, ff), F.from_entries(table, ff)):
        for fmt in ("text", "json"):
            assert _new(flat, fmt) == _old(table, fmt, ff)
        lines = _new(flat, "jsonl").splitlines()
        assert [json.loads(line) for line in lines] == json.loads(_old(table, "json", ff))["results"]


def test_shared_subtree_form_rebuilds_the_trees():
    table = topk(load_program(TRADE[0]), TRADE[1], "dealsWith(*, *)", 3, "confidence", "embedded", "heuristic",
                 None, None, lambda m: None)
    b = io.BytesIO()
    R.write(F.from_arrays(table), "dtable-jsonl", b)
    lines = [json.loads(x) for x in b.getvalue().decode().splitlines()]
    head, facts, nodes, results = lines[0], {}, {}, []
    rules = {r["name"]: r["weight"] for r in head["rules"]}
    for x in lines[1:]:
        if "entry" in x:  # children come first: every id is known
            f = facts[x["fact"]]
            w = rules[x["rule"]] if x["rule"] is not None else x["weight"]
            nodes[x["entry"]] = ({**f, "rule": x["rule"], "weight": w, "children": [nodes[c][0] for c in x["children"]]},
                                 x["weight"])
        elif "fact" in x:
            facts[x["fact"]] = {"relation": x["relation"], "args": x["args"]}
        else:
            f = facts[x["answer"]]
            results.append({"fact": f, "trees": [{"weight": nodes[t][1], "tree": nodes[t][0]} for t in x["trees"]]})
    old = json.loads(_old(table, "json"))["results"]
    for a, b in zip(results, old):
        assert a == b, (a, b)
    assert len(results) == len(old)


def test_float_weights_are_written_as_python_writes_them():
    random.seed(5)
    vals = [0.0, -0.0, 1.0, 0.9, 1e12, 1e16, 1e15, 123456789012.5, 1e-4, 1e-5, 5e-324, 1.7976931348623157e308,
            float("inf"), 0.8 * 0.69255, 999999999999.5, 0.1 + 0.2]
    vals += [random.random() ** random.randint(1, 40) for _ in range(20000)]
    vals += [abs(struct.unpack("d", struct.pack("Q", random.getrandbits(63)))[0]) for _ in range(20000)]
    vals = [v for v in vals if v == v]
    n = len(vals)
    w = F.Weights(F.W_FLOAT, np.array(vals))
    flat = F.Flat(1, "cost", None, [], [], pa.array(["x()"], pa.large_string()),
                  pa.array(['{"relation": "x", "args": []'], pa.large_string()), np.zeros(n, np.int64),
                  np.full(n, -1, np.int32), np.zeros(n + 1, np.int64), np.zeros(0, np.int64), w,
                  np.zeros(n, np.int64), np.arange(n + 1, dtype=np.int64), np.arange(n, dtype=np.int64), w)
    got = [json.loads(x)["trees"][0]["weight"] for x in _new(flat, "jsonl").splitlines()]
    assert [repr(x) for x in got] == [repr(tidy_weight(v)) for v in vals]
    expect = "".join(f"x()\n  #1  weight {format_weight(tidy_weight(v))}\n    x()  (fact {format_weight(tidy_weight(v))})\n\n"
                     for v in vals)
    assert _new(flat, "text") == expect
