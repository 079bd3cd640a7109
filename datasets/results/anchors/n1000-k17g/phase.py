"""Phase timing of one `selp topk` process (k17g): the kernel call's wall, CPU, system time and minor
faults against the whole process. Usage, in the graph's directory:
  SELP_THREADS=2 PYTHONPATH=TREE python3 phase.py topk tc.dl --db db -k 7 --pattern 'path(*, *)' -q --format summary"""
import os, sys, time, resource, runpy
import selp.topk.decomposed as D
orig = D._interruptible
rec = {}
def timed(call, lib):
    r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.perf_counter(); c0 = time.process_time()
    out = orig(call, lib)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    rec['c_wall'] = time.perf_counter() - t0; rec['c_cpu'] = time.process_time() - c0
    rec['c_flt'] = r1.ru_minflt - r0.ru_minflt; rec['c_sys'] = r1.ru_stime - r0.ru_stime
    return out
D._interruptible = timed
T0 = time.perf_counter()
sys.argv = ['selp'] + sys.argv[1:]
try:
    runpy.run_module('selp', run_name='__main__')
except SystemExit:
    pass
r = resource.getrusage(resource.RUSAGE_SELF)
print(f"C call wall {rec.get('c_wall',0):.3f} cpu {rec.get('c_cpu',0):.3f} sys {rec.get('c_sys',0):.3f} faults {rec.get('c_flt',0)} | process-from-main wall {time.perf_counter()-T0:.3f} cpu {r.ru_utime+r.ru_stime:.3f} faults {r.ru_minflt}", file=sys.stderr)
