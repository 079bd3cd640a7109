"""Pattern instrumentation of datalog programs (paper 001, Section 4); the reference matcher is in :mod:`selp.reference.match`."""
