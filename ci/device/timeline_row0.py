"""The timeline probe's row-0 tables side by side (sessions 47 - 55): for each (mode, form, B), every point's mean over
the probe's rounds of the slowest CTA's us since its start, and (in brackets) the step from the point before.
Usage: cd DIR && python3 ci/device/timeline_row0.py SIDE [SIDE ...], reading timeline-<side>-<k>.log (s47a.sh's rounds).
ci/device/timeline_phases.py is the B = 64 every-row form."""
import collections
import glob
import re
import sys

sides = sys.argv[1:]
data = collections.OrderedDict()  # case -> point -> side -> [us]
for s in sides:
    for f in sorted(glob.glob(f"timeline-{s}-*.log")):
        case = None
        for line in open(f):
            if not line.startswith(" ") and "," in line and "cluster" in line:
                case = line.split("(")[0].strip() + " " + re.search(r"B = \d+", line).group(0)
                continue
            m = re.match(r"  (\S.*?)\s+(\d+)\s+(\d+)\s+([\d.]+)$", line)
            if case and m and "point" not in line:
                data.setdefault(case, collections.OrderedDict()).setdefault(m.group(1), {}).setdefault(s, []).append(
                    float(m.group(4)))
for case, pts in data.items():
    print(case)
    prev = {s: 0.0 for s in sides}
    for point, d in pts.items():
        row = []
        for s in sides:
            v = d.get(s)
            if v:
                a = sum(v) / len(v)
                row.append(f"{a:6.2f} ({a - prev[s]:5.2f})")
                prev[s] = a
            else:
                row.append(" " * 14)
        print(f"  {point:18s}" + " | ".join(row))
