"""``selp serve``: a derivation explorer in the browser.

:mod:`selp.serve.app` is the web application (pages over a program or a CDSS store),
:mod:`selp.serve.jobs` runs its long computations in worker processes (progress, cancel),
:mod:`selp.serve.work` holds those computations (the CLI's library calls) and
:mod:`selp.serve.neighbourhood` draws a CDSS tuple's provenance-graph neighbourhood.
"""
