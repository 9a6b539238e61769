"""The sampler timeline probe's logs side by side (session 43): for each (mode, form) at B = 64, the launch's span of
each round and every phase's mean over every row of every round (a point's mean less the previous point's), us.
Usage: python3 ci/device/timeline_phases.py DIR SIDE [SIDE ...], reading DIR/timeline-<side>-<k>.log (k = 1, 2: s41j.sh's
rounds). The row-0 table of a log is one row; these means are the steadier measure (docs/vocab.md "Session 43")."""
import re
import statistics
import sys


def parse(path):
    out, cur, cols = {}, None, None
    for line in open(path):
        m = re.match(r"^(\S.*?), (\S+) \(cluster \d+, B = (\d+)", line)
        if m:
            cur, cols = (m.group(1), m.group(2), int(m.group(3))), None
            out[cur] = {"rows": [], "span": None}
        elif cur is None:
            continue
        elif "every row" in line:
            cols = [c.strip() for c in line.split(":", 1)[1].split("|")][1:-1]
        elif m := re.search(r"span of the launch.s rows: ([\d.]+)", line):
            out[cur]["span"] = float(m.group(1))
        elif cols and re.match(r"^\s+\d+ \|", line):
            vals = [float(x) for x in [p.strip() for p in line.split("|")][1:1 + len(cols)]]
            out[cur]["rows"].append(dict(zip(cols, vals)))
    return out


def main(d, sides):
    logs = {s: [parse(f"{d}/timeline-{s}-{k}.log") for k in (1, 2)] for s in sides}
    for key in logs[sides[0]][0]:
        if key[2] == 1:
            continue  # B = 1: row 0 alone, no every-row table
        print(f"{key[0]}, {key[1]} (B = {key[2]})")
        for s in sides:
            runs = [r[key] for r in logs[s] if key in r]
            rows = [row for r in runs for row in r["rows"]]
            prev, phases = 0.0, []
            for c in rows[0] if rows else []:
                mean = statistics.mean(row[c] for row in rows)
                phases.append(f"{c}={mean - prev:.2f}")
                prev = mean
            print(f"  {s:6s} span {[r['span'] for r in runs]}  " + "  ".join(phases))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
