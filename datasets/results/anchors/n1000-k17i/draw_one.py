import time, cProfile, pstats
from selp.topk.api import topk
dt = topk("tc.dl", "db", "path(*, *)", 7, engine="embedded")
fid = dt.fact_id("path", dt.values("path")[0])
cProfile.run("dt.entries_of(fid)", "/tmp/k17i/prof1.out")
pstats.Stats("/tmp/k17i/prof1.out").sort_stats("cumtime").print_stats(12)
