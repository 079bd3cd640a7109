"""Recomputing instances after the mappings change (Green & Ives [GI12]).

Z-relations (signed counts) on every engine (:mod:`zprogram`, :mod:`zref`, :mod:`zduck`,
:mod:`zspark`), rewriting of the new program against the old one (:mod:`rules`,
:mod:`rewrite`), and a best-first plan search with a cost model (:mod:`cost`, :mod:`search`).
"""
