"""Pattern instrumentation of datalog programs (paper 001, Section 4) and a reference matcher."""
