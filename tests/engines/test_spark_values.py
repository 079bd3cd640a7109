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
