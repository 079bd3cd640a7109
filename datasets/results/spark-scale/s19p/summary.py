"""Best of the rounds per tree (wall seconds and whole-process-tree CPU seconds, each the
minimum over the rounds) and the issue's two ratios, from bench_topk.py's JSON lines.
Usage: python summary.py results.jsonl"""
import collections, json, sys

rows = [json.loads(line) for line in open(sys.argv[1]) if '"run"' in line]
best: dict = collections.defaultdict(lambda: collections.defaultdict(dict))
for r in rows:
    leg = r["label"].split("-r")[0]
    for m in ("seconds", "cpu"):
        if m in r:
            best[leg][m][r["run"]] = min(best[leg][m].get(r["run"], 1e9), r[m])
for leg, ms in best.items():
    for m, runs in ms.items():
        ev, t1, t3, t7 = (runs.get(x) for x in ("eval", "topk k=1", "topk k=3", "topk k=7"))
        if None in (ev, t1, t3, t7):
            continue
        unit = "s" if m == "seconds" else "s CPU"
        print(f"{leg} ({m}): eval {ev} {unit}, top-1 {t1}, top-3 {t3} ({t3 / ev:.2f}x eval, target <= 2), "
              f"top-7 {t7} ({t7 / t1:.2f}x top-1, target <= 1.25)")
