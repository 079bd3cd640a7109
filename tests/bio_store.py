"""The bundled example ``examples/cdss/bio`` made into a store by the README's walkthrough
(``init``, ``import``, ``edit``, ``publish``, ``exchange``), through the real CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

from test_cli import ROOT, selp

BIO = ROOT / "examples" / "cdss" / "bio"


def build_bio_store(dest: Path) -> Path:
    """``dest`` holding a copy of the bio example with a store in which PBioSQL has exchanged."""
    shutil.copytree(BIO, dest)
    steps = [
        ("cdss", "init", str(dest)),
        ("cdss", "import", str(dest), "--peer", "PGUS", "--relation", "G", str(dest / "data" / "PGUS" / "G.csv")),
        ("cdss", "edit", str(dest), "--peer", "PuBio", "+U(2, 5)"),
        ("cdss", "publish", str(dest), "--peer", "PGUS"),
        ("cdss", "publish", str(dest), "--peer", "PuBio"),
        ("cdss", "exchange", str(dest), "--peer", "PBioSQL", "-q"),
    ]
    for args in steps:
        r = selp(*args)
        assert r.returncode == 0, (args, r.stderr[-2000:])
    return dest
