# Usage (from the worktree): ROUNDS=60 PYTHONPATH=$PWD flock /work/bench.lock python3 -W ignore datasets/results/maintain/long-repair/long60/drive.py
# (EXTRA=8: 396 links; KW="{...}": Absorption keyword arguments, e.g. KW="{'repair': False}")
# Replays the bench's mixed stream (selp bench maintain --mixed ROUNDS, seed 0) on the transit-stub
# reachable view with absorption-bdd alone, one line per change: CPU time, live BDD nodes, held /
# waiting edges, tuples repaired so far; at the end the view against recomputation.
import pickle, random, sys, time, os
from pathlib import Path
from selp.bench.maintain import generate, PROGRAMS, mixed_stream
from selp.language import parse_program_file
from selp.language.validate import analyze
from selp.database import load_database
from selp.maintain.absorption import Absorption
from selp.maintain.formula import Blowup
extra = int(os.environ.get("EXTRA", 8)); rounds = int(os.environ.get("ROUNDS", 30)); seed = 0
data = Path(os.environ.get("DATA", f"/tmp/selp-drive-data{extra}"))  # the generated network
stats = generate("transit-stub", data, seed, extra)
analysis = analyze(parse_program_file(PROGRAMS / "reachable.dl"))
base = {rel: set(fs) for rel, fs in load_database(analysis, data).facts.items() if rel in analysis.edb}
victims = sorted(base["link"], key=repr); random.Random(seed).shuffle(victims); victims = victims[:10]
import ast
kw = ast.literal_eval(os.environ.get("KW", "{}"))
t0 = time.process_time()
m = Absorption(analysis, base, formulas="bdd", **kw)
print("build cpu", round(time.process_time() - t0, 1), "links", len(base["link"]), flush=True)
def nodes(): return m.alg.bdd.statistics(exact_node_count=False)["n_nodes"]
for v in victims:
    m.apply({}, {"link": {v}})
stream = mixed_stream(base["link"] - set(victims), victims, rounds, seed)
tot = 0
for k, (op, fact) in enumerate(stream):
    c0 = time.process_time()
    try:
        m.apply({"link": {fact}} if op == "+" else {}, {"link": {fact}} if op == "-" else {})
    except Blowup as e:
        print(k + 1, op, fact, "BLOWUP", e.args, round(time.process_time() - c0, 2)); sys.exit(1)
    dt = time.process_time() - c0; tot += dt
    print(k + 1, op, fact, f"{dt*1000:.1f}ms", "nodes", nodes(), "held", sum(map(len, m.lazy_edges.values())), "partial", sum(map(len, m.partial_edges.values())), "folded", m.folded, "repaired", m.repaired, flush=True)
print("total cpu", round(tot, 2), "per change ms", round(tot / len(stream) * 1000, 1))
from selp.maintain.recompute import from_scratch
cur = set(base["link"]) - set(victims)
for op, fact in stream:
    cur = cur - {fact} if op == "-" else cur | {fact}
assert m.view() == from_scratch(analysis, {"link": cur}), "view differs from recomputation"
print("view equals recomputation at the end")
