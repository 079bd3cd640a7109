"""Medians of phase.sh's output (the kernel call's wall, CPU, system time and faults, and the
process's wall and CPU) per k and tree. Usage: python3 phase_medians.py phase-1.txt"""
import re, statistics, sys
rows: dict[tuple[str, str], list[list[float]]] = {}
for line in open(sys.argv[1]):
    m = re.match(r"k=(\d+) (\w+) C call wall ([\d.]+) cpu ([\d.]+) sys ([\d.]+) faults (\d+) \| process-from-main wall ([\d.]+) cpu ([\d.]+)", line)
    if m:
        rows.setdefault((m[1], m[2]), []).append([float(x) for x in m.groups()[2:]])
for (k, tree), rs in sorted(rows.items()):
    med = [statistics.median(c) for c in zip(*rs)]
    print(f"k={k} {tree:6} kernel call: wall {med[0]:.3f} CPU {med[1]:.3f} sys {med[2]:.3f} faults {med[3]:,.0f} | process: wall {med[4]:.3f} CPU {med[5]:.3f}  ({len(rs)} runs)")
