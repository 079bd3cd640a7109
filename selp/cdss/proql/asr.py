"""Access support relations (placeholder; filled in below)."""

from __future__ import annotations


def attach_asrs(g):
    """``g`` with the epoch's ASRs (none yet)."""
    return g
