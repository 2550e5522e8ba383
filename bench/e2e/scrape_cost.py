#!/usr/bin/env python3
"""Gateway CPU per telemetry scrape, end to end.

One idle gateway (`workers: 1`, health probes off) over N emulated replicas hosted by two
`switchyard engine --replicas` processes on 127.0.0.1. After a warm-up, the gateway's CPU time
(every thread, from /proc/PID/task/*/schedstat, in nanoseconds) and its
`switchyard_telemetry_scrapes_total` are read twice, SECONDS apart:

  per scrape = CPU / scrapes, everything the gateway did in that time included;
  marginal   = (CPU at the larger fleet - CPU at the smaller) / (scrapes - scrapes): what one
               more scrape costs, without what an idle gateway spends whatever its fleet.

With --before, the baseline binary runs interleaved with the one under test, REPEAT times, and
the medians and the ratio are printed. Every process started is stopped on exit.

  python3 bench/e2e/scrape_cost.py --after build/release/switchyard [--before OLD] \\
      [--replicas 256,1024] [--seconds 20] [--repeat 3]
"""
import argparse
import http.client
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

GPUS = ["A10", "L20", "A100", "H100"]


class Procs:
    def __init__(self):
        self.procs = []

    def start(self, args, **kw):
        proc = subprocess.Popen(args, **kw)
        self.procs.append(proc)
        return proc

    def stop(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs = []


def line_with(proc, word, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = proc.stdout.readline().decode()
        if not line:
            break
        if word in line:
            return line
    raise RuntimeError("no '%s' line from %s" % (word, proc.args[0]))


def cpu_seconds(pid):
    total = 0
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, task)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass  # a thread that just ended
    return total / 1e9


def scrapes_total(admin):
    conn = http.client.HTTPConnection(admin, timeout=10)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("switchyard_telemetry_scrapes_total"))


def measure(binary, replicas, seconds, warmup, work):
    procs = Procs()
    try:
        engines = []
        per = (replicas + 1) // 2
        for first in range(0, replicas, per):
            path = os.path.join(work, "engines-%d.yaml" % first)
            with open(path, "w") as f:
                f.write("replicas:\n")
                for i in range(first, min(replicas, first + per)):
                    f.write("  - { listen: 127.0.0.1:0, gpu: %s, model: llama2-7b }\n"
                            % GPUS[i % len(GPUS)])
            proc = procs.start([binary, "engine", "--replicas", path], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
            engines.extend(line_with(proc, "listening").split()[1:])
        config = os.path.join(work, "gateway.yaml")
        with open(config, "w") as f:
            f.write("listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\n"
                    "routing: { default_strategy: load-balance }\n"
                    "telemetry: { scrape_interval_ms: 100 }\n"
                    "health: { probe_interval_ms: 600000 }\n"
                    "models:\n  - name: llama2-7b\n    replicas:\n")
            for i, address in enumerate(engines):
                f.write("      - { address: %s, labels: { gpu: %s, engine: vllm } }\n"
                        % (address, GPUS[i % len(GPUS)]))
        gateway = procs.start([binary, "gateway", "--config", config], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
        admin = line_with(gateway, "listening").split()[2]
        time.sleep(warmup)
        s0, c0, t0 = scrapes_total(admin), cpu_seconds(gateway.pid), time.time()
        time.sleep(seconds)
        s1, c1, t1 = scrapes_total(admin), cpu_seconds(gateway.pid), time.time()
        return (s1 - s0) / (t1 - t0), (c1 - c0) / (t1 - t0)
    finally:
        procs.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--after", required=True, help="switchyard binary under test")
    p.add_argument("--before", default="", help="baseline binary, run interleaved")
    p.add_argument("--replicas", default="256,1024", help="two fleet sizes: small,large")
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--warmup", type=float, default=8)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    small, large = (int(x) for x in args.replicas.split(","))
    binaries = [("after", args.after)] + ([("before", args.before)] if args.before else [])
    work = tempfile.mkdtemp(prefix="switchyard-scrape-cost.")
    results = {label: {"per_scrape": [], "marginal": []} for label, _ in binaries}
    try:
        for run in range(args.repeat):
            for label, binary in binaries:
                rate_s, cores_s = measure(binary, small, args.seconds, args.warmup, work)
                rate_l, cores_l = measure(binary, large, args.seconds, args.warmup, work)
                per_scrape = cores_l / rate_l * 1e6
                marginal = (cores_l - cores_s) / (rate_l - rate_s) * 1e6
                results[label]["per_scrape"].append(per_scrape)
                results[label]["marginal"].append(marginal)
                print("run %d %-6s  %d replicas: %6.0f scrapes/s %.4f cores  |  %d replicas: "
                      "%6.0f scrapes/s %.4f cores  |  per scrape %.2f us, marginal %.2f us"
                      % (run + 1, label, small, rate_s, cores_s, large, rate_l, cores_l,
                         per_scrape, marginal), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print("| binary | gateway CPU per scrape at %d replicas (µs) | marginal, %d→%d (µs) |"
          % (large, small, large))
    print("|---|---|---|")
    medians = {}
    for label, _ in binaries:
        medians[label] = (statistics.median(results[label]["per_scrape"]),
                          statistics.median(results[label]["marginal"]))
        print("| %s | %.1f | %.1f |" % (label, medians[label][0], medians[label][1]))
    if "before" in medians:
        print("after / before: per scrape %.2f, marginal %.2f"
              % (medians["after"][0] / medians["before"][0],
                 medians["after"][1] / medians["before"][1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
