"""Incremental maintenance of recursive views under insertions and deletions of base tuples.

Three strategies behind one interface (:class:`selp.maintain.base.Maintainer`):
``absorption`` (absorption provenance [LTZIL10], :mod:`selp.maintain.absorption`), ``dred``
(delete and rederive [GMS93], :mod:`selp.maintain.dred`) and ``recompute`` (from scratch,
:mod:`selp.maintain.recompute`). :mod:`selp.maintain.session` chooses one, falls back from
absorption to DRed when formulas blow up, and keeps the state durable between runs.
"""
