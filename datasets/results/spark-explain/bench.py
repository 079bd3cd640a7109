"""One-shot ``selp explain --engine spark`` of one fact, as a whole process (session start
included): this tree against ``BASE_COMMIT``'s code, issue 19.

Usage: ``python datasets/results/spark-explain/bench.py OUT_DIR [NODES] [BASE_COMMIT]``
(defaults 1000 nodes, commit 2a225da: main before the class-data archive, issue 19). On the anchors graph (``selp.gen.anchors``, right-recursive
closure ``path``) it runs ``selp explain tc.dl --db db -k 3 FACT --engine spark -q`` (FACT: the
generator's ``explain_fact``, ``path(0, 1)`` at 1,000 nodes) with the new code, the old code, and
the new code again, and checks that all three print the same trees (with a run before them
that writes the new code's class-data archive into ``OUT_DIR/cache`` when there is none). Writes ``results.json`` (the
seconds, the load average before and after) and prints it.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path


def main() -> None:
    out = Path(sys.argv[1])
    nodes = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    base = sys.argv[3] if len(sys.argv) > 3 else "2a225da"
    here = Path(__file__).resolve().parents[3]
    from selp.gen.anchors import generate_graph

    work = out / "work"
    stats = generate_graph(nodes, work)
    old = out / "old"
    if not old.exists():
        data = subprocess.run(["git", "-C", str(here), "archive", base, "selp"], capture_output=True, check=True).stdout
        tarfile.open(fileobj=io.BytesIO(data)).extractall(old)
        for so in (here / "selp" / "topk").glob("_kernel*.so"):  # the compiled kernel is not in git
            shutil.copy2(so, old / "selp" / "topk" / so.name)
    cmd = [sys.executable, "-m", "selp", "explain", str(work / "tc.dl"), "--db", str(work / "db"), "-k", "3",
           stats["explain_fact"], "--engine", "spark", "-q", "--conf", "spark.driver.memory=2g"]
    uptime0 = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    load0 = os.getloadavg()
    runs = []
    texts = set()
    # the new code's JVM starts from a class-data archive (selp.engines.spark_archive), made by
    # the first short session: a run before the timed ones makes it (its time is recorded too)
    cache = out / "cache"
    plan = (("new", here), ("old", old), ("new", here))
    if not any(cache.glob("*.jsa")):
        plan = (("new, writes the class archive", here),) + plan
    for label, tree in plan:
        t = time.perf_counter()
        # run outside any source tree: ``python -m`` puts the working directory first on the path
        p = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(tree), SELP_CACHE_DIR=str(cache)), capture_output=True, text=True, cwd=out)
        secs = time.perf_counter() - t
        if p.returncode:
            sys.exit(f"{label}: {p.stderr[-2000:]}")
        texts.add(p.stdout)
        runs.append({"code": label, "tree": str(tree), "seconds": round(secs, 2), "loadavg_after": os.getloadavg(),
                     "stderr": p.stderr.strip().splitlines()[-3:]})
        print(runs[-1], flush=True)
    res = {"graph": stats, "base": base, "command": cmd[2:], "same_trees": len(texts) == 1, "uptime_start": uptime0, "loadavg_start": load0,
           "loadavg_end": os.getloadavg(),
           "uptime_end": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(), "runs": runs, "trees": sorted(texts)[0]}
    (Path(__file__).parent / "results.json").write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
