import tempfile, hashlib
from pathlib import Path
from selp.bench.maintain import generate
from selp.database import load_database
from selp.language import parse_program_file
from selp.bench.maintain import PROGRAMS
from selp.language.validate import analyze
from selp.maintain.order import dfs_order
for x in (1, 2, 8):
    d = Path(tempfile.mkdtemp()); generate("transit-stub", d, 0, x)
    a = analyze(parse_program_file(PROGRAMS / "reachable.dl"))
    base = {rel: set(fs) for rel, fs in load_database(a, d).facts.items() if rel in a.edb}
    items = [(rel, f) for rel in sorted(base) for f in sorted(base[rel], key=repr)]
    print(x, hashlib.sha1(repr(dfs_order(items)).encode()).hexdigest()[:12])
