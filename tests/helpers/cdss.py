"""The bundled CDSS running example (``examples/cdss/bio``) in a temporary folder, and
``selp cdss`` run in-process with the checks every CDSS test makes of its outcome."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from click.testing import CliRunner, Result

from helpers.paths import BIO
from selp.cdss.store import STORE_DIR, Store
from selp.cli import main
from selp.values import Skolem

PEER_FILES = [("PGUS", "G"), ("PBioSQL", "B"), ("PuBio", "U")]


def make_cdss(tmp_path: Path, trust: bool = True, name: str = "bio") -> Path:
    """A copy of the bundled running example (without a store); ``trust=False`` drops
    PBioSQL's trust conditions and costs (the dissertation's Example 5: everyone trusts all)."""
    d = tmp_path / name
    shutil.copytree(BIO, d, ignore=shutil.ignore_patterns(STORE_DIR))
    if not trust:
        text = (d / "cdss.toml").read_text()
        text = re.sub(r"\[\[peers\.PBioSQL\.trust\]\].*?(?=\[peers\.PuBio\])", "", text, flags=re.DOTALL)
        (d / "cdss.toml").write_text(text)
    return d


def cdss_cli(*args: str | Path) -> Result:
    """``selp cdss ARGS`` in-process; errors are printed as ``error: ...`` on stderr."""
    return CliRunner().invoke(main, ["cdss", *map(str, args)])


def ok(res: Result) -> str:
    """The standard output of a command that must have succeeded."""
    assert res.exit_code == 0, res.output + res.stderr
    return res.stdout


def one_line_error(res: Result, *fragments: str) -> str:
    """The command failed with exit 1 and one line on stderr holding every fragment."""
    assert res.exit_code == 1, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("error: "), lines
    for f in fragments:
        assert f in lines[0], lines[0]
    assert "Traceback" not in res.output
    return lines[0]


def load_running_example(d: Path, publish: bool = True) -> None:
    """init, import each peer's CSV as one batch, publish each (Example 5's edit logs)."""
    ok(cdss_cli("init", d))
    for peer, rel in PEER_FILES:
        ok(cdss_cli("import", d, "--peer", peer, "--relation", rel, d / "data" / peer / f"{rel}.csv"))
        if publish:
            ok(cdss_cli("publish", d, "--peer", peer))


def instance(d: Path, peer: str, relation: str, with_nulls: bool = True) -> set:
    """A relation of the compiled program in ``peer``'s instance, read from the store."""
    with Store.open(d) as s:
        epoch = s.peer_epoch(peer)
        assert epoch is not None
        rows = s.read_epoch(epoch, [relation])[relation]
    return rows if with_nulls else {r for r in rows if not any(isinstance(v, Skolem) for v in r)}


def build_bio_store(dest: Path) -> Path:
    """``dest`` holding a copy of the bio example with a store in which PBioSQL has exchanged,
    made by the README's walkthrough (``init``, ``import``, ``edit``, ``publish``, ``exchange``)."""
    shutil.copytree(BIO, dest)
    ok(cdss_cli("init", dest))
    ok(cdss_cli("import", dest, "--peer", "PGUS", "--relation", "G", dest / "data" / "PGUS" / "G.csv"))
    ok(cdss_cli("edit", dest, "--peer", "PuBio", "+U(2, 5)"))
    ok(cdss_cli("publish", dest, "--peer", "PGUS"))
    ok(cdss_cli("publish", dest, "--peer", "PuBio"))
    ok(cdss_cli("exchange", dest, "--peer", "PBioSQL", "-q"))
    return dest
