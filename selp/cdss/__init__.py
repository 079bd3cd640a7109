"""The collaborative data sharing system (CDSS): peers, schema mappings, update exchange, ProQL.

Modules: :mod:`~selp.cdss.model` (peers, relations, mappings, trust policies),
:mod:`~selp.cdss.mapping_parser` (tgd and trust-condition syntax), :mod:`~selp.cdss.config`
(``cdss.toml`` loading and checks), :mod:`~selp.cdss.acyclicity` (weak acyclicity),
:mod:`~selp.cdss.compile` (compilation to datalog^sk), :mod:`~selp.cdss.evaluate` (full
computation with selp's engines) and :mod:`~selp.cdss.cli` (``selp cdss``).
"""
