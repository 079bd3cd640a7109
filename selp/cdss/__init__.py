"""The collaborative data sharing system (CDSS): peers, schema mappings, update exchange, ProQL.

Modules: :mod:`~selp.cdss.model` (peers, relations, mappings, trust policies),
:mod:`~selp.cdss.mapping_parser` (tgd and trust-condition syntax), :mod:`~selp.cdss.config`
(``cdss.toml`` loading and checks), :mod:`~selp.cdss.acyclicity` (weak acyclicity),
:mod:`~selp.cdss.compile` (compilation to datalog^sk), :mod:`~selp.cdss.evaluate` (full
computation with selp's engines), :mod:`~selp.cdss.store` (the durable store: SQLite catalog and
edit logs, Parquet epochs switched atomically), :mod:`~selp.cdss.edits` (edit batches and their
checks), :mod:`~selp.cdss.exchange` (update exchange through the store),
:mod:`~selp.cdss.maintainer` (incremental insertion, PropagateDelete, DRed, over a backend)
with its backends :mod:`~selp.cdss.incremental` (Python sets) and
:mod:`~selp.cdss.incremental_spark`, :mod:`~selp.cdss.explain` (top-k derivations of a peer's
tuple by trust cost, and why-not), :mod:`~selp.cdss.instance` (a peer's relation as of its last
exchange), :mod:`~selp.cdss.summary` (the one-line summary of a CDSS) and :mod:`~selp.cdss.proql`
(the provenance query language). The generated CDSSs are in :mod:`selp.gen` (``swissprot``,
``proql``, ``cdss_chain``), their benchmarks in :mod:`selp.bench` (``cdss``, ``incremental``,
``proql``). The ``selp cdss`` commands are :mod:`selp.cli.cdss`.
"""
