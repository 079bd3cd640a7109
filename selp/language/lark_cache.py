"""Lark parsers built once per grammar and cached on disk in the user's own cache directory.

Building an LALR parser from a grammar takes about 0.2 s, a fifth of a one-shot ``selp eval``;
lark can save the built parser and load it in milliseconds. Lark's own ``cache=True`` writes
into the shared temporary directory, where another user could plant the (pickled) file; this
keeps it in ``$XDG_CACHE_HOME/selp`` (``~/.cache/selp``), named by a hash of the grammar, the
options and lark's version, and simply builds the parser when that directory is not writable.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import lark
from lark import Lark


def cache_dir() -> Path:
    """Where selp keeps its per-user caches."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "selp"


def cached_lark(grammar: str, **options: Any) -> Lark:
    """``Lark(grammar, **options)``, loaded from the per-user cache when it was built before."""
    key = hashlib.sha256(repr((grammar, sorted(options.items()), lark.__version__)).encode("utf-8")).hexdigest()[:32]
    path = cache_dir() / f"lark-{key}.cache"
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if path.parent.stat().st_uid != os.getuid():  # not our directory: do not trust its files
            raise PermissionError(str(path.parent))
    except OSError:
        return Lark(grammar, **options)
    try:
        return Lark(grammar, cache=str(path), **options)
    except Exception:  # noqa: BLE001 - a corrupt or foreign cache file: rebuild without it
        path.unlink(missing_ok=True)
        return Lark(grammar, **options)
