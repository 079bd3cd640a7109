"""Deterministic generators of the benchmark datasets, one module per dataset (see datasets/README.md).

:mod:`.tc` (transitive closure over an undirected graph), :mod:`.iris`, :mod:`.amie`,
:mod:`.explain` (the programs of :mod:`selp.bench.datasets`), :mod:`.anchors` (the directed graph of
``selp bench anchors``), :mod:`.swissprot` (SWISS-PROT-like CDSSs, ``selp gen cdss``),
:mod:`.proql` (those on the ProQL benchmark's topologies) and :mod:`.cdss_chain` (the incremental
benchmark's two-way chain). The same seed and parameters give byte-identical data.
"""
