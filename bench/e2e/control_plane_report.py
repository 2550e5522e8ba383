#!/usr/bin/env python3
"""Table and plots of bench/e2e/control_plane.py's CSV: prints a Markdown table (medians of
repeated rows) and writes one PNG per figure against the replica count, a line per binary x
gateways x load, log-scaled axes. Usage: control_plane_report.py OUT_DIR"""
import collections
import csv
import os
import statistics
import subprocess
import sys

FIGURES = [
    ("gateway_cpu_cores", "gateway CPU per gateway (cores)", "%.3f"),
    ("engine_scrapes_per_s", "scrapes/s the engines served", "%.0f"),
    ("gateway_scrapes_per_s", "scrapes/s the gateways made (sum)", "%.0f"),
    ("engine_cpu_cores", "engine processes CPU (cores)", "%.3f"),
    ("redis_cpu_cores", "Redis CPU (cores)", "%.4f"),
    ("redis_bytes_per_s", "Redis bytes/s (in + out)", "%.0f"),
    ("signal_age_p99_ms", "signal age p99 (ms, worst gateway)", "%.0f"),
    ("gateway_rss_mib", "gateway RSS (MiB)", "%.0f"),
    ("reload_ms", "SIGHUP reload: parse + rebuild (ms)", "%.0f"),
]


def main():
    out = sys.argv[1]
    rows = list(csv.DictReader(open(os.path.join(out, "control_plane.csv"))))
    groups = collections.defaultdict(list)
    for r in rows:
        groups[(r["binary"], int(r["gateways"]), r["load"], int(r["replicas"]))].append(r)

    def med(key, field):
        values = [float(r[field]) for r in groups[key] if r[field] not in ("", "nan")]
        return statistics.median(values) if values else float("nan")

    print("| binary | gateways | load | replicas | " +
          " | ".join(f[1] for f in FIGURES) + " |")
    print("|---|---|---|---|" + "---|" * len(FIGURES))
    for key in sorted(groups, key=lambda k: (k[3], k[1], k[2], k[0] != "before")):
        print("| %s | %d | %s | %d | " % key +
              " | ".join(f[2] % med(key, f[0]) for f in FIGURES) + " |")

    series = sorted({k[:3] for k in groups})
    for field, title, _ in FIGURES:
        data = os.path.join(out, "%s.dat" % field)
        with open(data, "w") as f:
            for s in series:
                f.write('"%s, %d gw, %s"\n' % s)
                for n in sorted({k[3] for k in groups if k[:3] == s}):
                    v = med(s + (n,), field)
                    if v == v and v > 0:
                        f.write("%d %g\n" % (n, v))
                f.write("\n\n")
        script = """
set terminal pngcairo size 900,560 noenhanced
set output '%s'
set title '%s'
set xlabel 'replicas'
set logscale x 2
set logscale y
set key outside right
set grid
plot for [i=0:%d] '%s' index i using 1:2 with linespoints title columnheader(1)
""" % (os.path.join(out, "%s.png" % field), title, len(series) - 1, data)
        subprocess.run(["gnuplot"], input=script, text=True, check=False)
    print("\nCSV: %s; PNGs: %s/*.png" % (os.path.join(out, "control_plane.csv"), out))


if __name__ == "__main__":
    main()
