"""The union-find that labels value components for the decomposition by value components: every
node gets the smallest id of its connected component (checked against a breadth-first search)."""

from __future__ import annotations

import random
from collections import deque

import numpy as np
import pytest

from selp.engines.spark_values import components


def _bfs_labels(n: int, edges: list[tuple[int, int]]) -> list[int]:
    adj: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        adj[a].append(b)
        adj[b].append(a)
    label = [-1] * n
    for s in range(n):
        if label[s] < 0:
            label[s] = s  # s is the smallest unlabelled node, hence its component's smallest
            todo = deque([s])
            while todo:
                u = todo.popleft()
                for v in adj[u]:
                    if label[v] < 0:
                        label[v] = s
                        todo.append(v)
    return label


@pytest.mark.parametrize("seed", range(8))
def test_components_equal_a_breadth_first_search(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randrange(1, 60)
    edges = [(rng.randrange(n), rng.randrange(n)) for _ in range(rng.randrange(0, 2 * n))]
    a = np.array([e[0] for e in edges], dtype=np.int64)
    b = np.array([e[1] for e in edges], dtype=np.int64)
    assert components(a, b, n).tolist() == _bfs_labels(n, edges)


def test_a_long_path_in_reverse_order_is_one_component() -> None:
    # the worst order for hooking: every pass links only neighbours
    n = 2000
    a = np.arange(n - 1, 0, -1, dtype=np.int64)
    assert components(a, a - 1, n).tolist() == [0] * n


@pytest.mark.spark
def test_value_labels_on_spark_are_the_components_of_every_fact(spark) -> None:
    """The labels Spark computes (one narrow job, pairs not deduplicated): a binary relation's
    facts twice over and a unary relation whose values meet no other fact; the values with one
    label are exactly a connected component, the label one of them; a row count over the limit
    is refused before any job."""
    from selp.engines.spark_values import LABEL, V, value_labels

    rng = random.Random(5)
    pairs = [(rng.randrange(40), rng.randrange(40)) for _ in range(50)]
    binary = spark.createDataFrame([(str(a), str(b)) for a, b in pairs * 2], "c0 string, c1 string")
    unary = spark.createDataFrame([(str(v),) for v in (41, 42, 3)], "c0 string")
    got = value_labels(spark, [(binary, 2, 2 * len(pairs)), (unary, 1, 3)], 1000)
    labels = {r[V]: r[LABEL] for r in got.collect()}
    values = sorted({v for p in pairs for v in p} | {41, 42, 3})
    index = {v: i for i, v in enumerate(values)}
    expected = _bfs_labels(len(values), [(index[a], index[b]) for a, b in pairs])
    components_ = {}
    for v in values:
        components_.setdefault(expected[index[v]], set()).add(str(v))
    by_label: dict[str, set[str]] = {}
    for v, label in labels.items():
        by_label.setdefault(label, set()).add(v)
    assert sorted(map(sorted, by_label.values())) == sorted(map(sorted, components_.values()))
    assert all(label in members for label, members in by_label.items())
    assert value_labels(spark, [(binary, 2, 2 * len(pairs))], 99) == "100 value pairs to label, over the broadcast limit 99"
