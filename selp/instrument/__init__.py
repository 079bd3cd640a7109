"""Pattern instrumentation of datalog programs ([DGM15] Section 4; citations in docs/references.md); the reference matcher is in :mod:`selp.reference.match`."""
