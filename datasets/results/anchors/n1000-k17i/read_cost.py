"""k17i: what computing origins and child-slot pointers on read costs (moved from the kernel call
to the first tree drawn or DTable saved), top-k of every path fact of the anchors graph: one
fact's trees drawn (its entries and those below them), then the whole origin array."""
import time
from selp.topk.api import topk
for k in (1, 7):
    dt = topk("tc.dl", "db", "path(*, *)", k, engine="embedded")
    res = dt.res
    fid = dt.fact_id("path", dt.values("path")[0])
    t0, c0 = time.perf_counter(), time.process_time()
    dt.entries_of(fid)
    t1, c1 = time.perf_counter(), time.process_time()
    done = int(res.origins_of.done.sum()) - res.own_leaves if hasattr(res, "origins_of") else -1
    o = res.origin
    t2, c2 = time.perf_counter(), time.process_time()
    print(f"k={k} entries {len(res.w)}: one fact's entries {t1 - t0:.3f} s wall ({c1 - c0:.3f} CPU; {done} origins computed), "
          f"then every origin {t2 - t1:.3f} s wall ({c2 - c1:.3f} CPU)")
