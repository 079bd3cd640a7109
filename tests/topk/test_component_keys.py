"""The fact keys a partition-local Spark DTable gives its facts (selp.topk.component.fact_keys):
a pointer (key, origin) must name one fact's entry, so no two facts of a component share a key."""

from __future__ import annotations

import numpy as np

from selp.topk.component import fact_keys


def test_facts_of_every_partition_get_distinct_keys():
    salt = 0x5EED << 24
    keys = np.concatenate([fact_keys(salt, p, 50_000) for p in range(64)])
    assert len(np.unique(keys)) == len(keys)
    # a retried task numbers its facts the same way, so it makes the same keys
    assert np.array_equal(fact_keys(salt, 3, 10), fact_keys(salt, 3, 10))


def test_keys_do_not_follow_the_fact_numbers():
    """Keys look like the hashes the other facts of the DTable are keyed by: not the small
    consecutive integers (partition, fact) that would meet other components' keys."""
    keys = fact_keys(0, 0, 1000)
    assert not np.any((keys >= 0) & (keys < 1 << 40))
    assert (keys < 0).mean() > 0.3 and (keys > 0).mean() > 0.3
