"""Top-k selective provenance: the DTable, its kernels and the commands' API."""

K_MAX = 2**31 - 1  # the top-k kernel ranks entries with int32: the largest k it can run
