"""How many examples a property test draws, by the hypothesis profile in force: ``fast`` (the
default, the fast suite) draws a quarter of a test's full count, ``thorough``
(``--hypothesis-profile=thorough``, CI's second stage) the full count."""

from __future__ import annotations

import math

from hypothesis import settings

FULL = 100  # the thorough profile's max_examples: a test's own count is meant for it


def examples(full: int) -> int:
    """``full`` examples scaled to the profile in force (at least two)."""
    return max(2, math.ceil(full * settings.default.max_examples / FULL))
