"""The benchmarks, apart from the product: each measures the engines on generated data
(:mod:`selp.gen`) and records what it measured.

* :mod:`.datasets` -- the dataset registry (name -> generator, bundled program, bundled named
  patterns, calibration of ``--scale``); the programs and pattern files are package data in
  ``selp/bench/programs/`` (:func:`.datasets.bundled`);
* :mod:`.harness` -- ``selp bench DATASET``: semi-naive vs selective top-k vs full provenance;
* :mod:`.fullprov` -- the full-provenance baseline it compares with;
* :mod:`.patterns` -- files of named patterns (``name: pattern`` per line);
* :mod:`.instrument` -- ``selp bench instrument``: Algorithm 1 alone, per named pattern;
* :mod:`.tc` -- ``python -m selp.bench``: the engines' plain evaluation of TC, exact counts;
* :mod:`.anchors` -- ``selp bench anchors``: whole CLI processes beside DuckDB and Nemo;
* :mod:`.cdss`, :mod:`.incremental`, :mod:`.proql` -- update exchange, incremental maintenance
  and ProQL on generated CDSSs;
* :mod:`.measure` and :mod:`.results` -- memory figures, the machine, the result files.
"""
