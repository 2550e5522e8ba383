#!/usr/bin/env python3
"""The control plane at scale (`make bench-control-plane`, driven by bench/e2e/control_plane.sh).

For each replica count: several `switchyard engine --replicas FILE` processes host the emulated
fleet (four GPU types), one real redis-server holds the shared state. Then for each gateway count
(1, 3), load (idle, light: open-loop Poisson) and binary (before, after; interleaved) the gateways
start, warm up, and over a measured window this records:

  gateway CPU (utime+stime from /proc, mean per gateway, in cores), gateway RSS (max, MiB),
  engine CPU (all engine processes, cores), scrapes per second the engines served
  (switchyard_engine_metrics_scrapes_total, sampled replicas scaled to the fleet) and the sum of
  the gateways' own switchyard_telemetry_scrapes_total, Redis CPU (INFO cpu, cores) and bytes/s
  (INFO stats, in + out), signal age p99 over replicas (each gateway's /debug/fleet, sampled;
  the worst gateway), and the time a SIGHUP reload of the whole fleet takes (the gateway log:
  "reloading" to "reloaded", config parse included).

Writes <out>/control_plane.csv (one row per run) and prints each row as it goes.
Loopback only; every process started here is stopped when the run ends, whatever happens.
"""
import argparse
import csv
import http.client
import json
import math
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

GPUS = ["A10", "L20", "A100", "H100"]
CLK_TCK = os.sysconf("SC_CLK_TCK")


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--after", required=True, help="switchyard binary under test")
    p.add_argument("--before", default="", help="baseline binary (empty: none)")
    p.add_argument("--replicas", default="256,1024,4096")
    p.add_argument("--gateways", default="1,3")
    p.add_argument("--loads", default="idle,light")
    p.add_argument("--warmup", type=float, default=4)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--light-rate", type=float, default=20, help="requests/s in the light load")
    p.add_argument("--per-engine", type=int, default=1024, help="replicas per engine process")
    p.add_argument("--sample-replicas", type=int, default=256,
                   help="replicas whose engine-side scrape counter is read")
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=7)
    return p.parse_args()


class Procs:
    """Every process this run started; stop() ends them all (TERM, then KILL)."""

    def __init__(self):
        self.procs = []

    def start(self, args, **kw):
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, **kw)
        self.procs.append(proc)
        return proc

    def stop(self, procs=None):
        procs = list(self.procs if procs is None else procs)
        for p in procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.time() + 8
        for p in procs:
            try:
                p.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p in self.procs:
                self.procs.remove(p)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_line_with(proc, prefix, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            if proc.poll() is not None:
                raise RuntimeError("process exited before '%s'" % prefix)
            continue
        line = line.decode(errors="replace").strip()
        if line.startswith(prefix):
            return line
    raise RuntimeError("no '%s' line in %ss" % (prefix, timeout))


def drain(proc, log):
    """Copies the process's stdout (spdlog writes there) into `log`, so the pipe never fills."""
    def run():
        for raw in iter(proc.stdout.readline, b""):
            log.write(raw.decode(errors="replace"))
            log.flush()
    threading.Thread(target=run, daemon=True).start()


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def redis_info(port):
    """(CPU seconds used by Redis, bytes in + out so far)."""
    out = subprocess.run(["redis-cli", "-p", str(port), "INFO", "everything"],
                         capture_output=True, text=True, timeout=10).stdout
    info = {}
    for line in out.splitlines():
        if ":" in line:
            k, _, v = line.strip().partition(":")
            info[k] = v
    return (float(info.get("used_cpu_sys", "nan")) + float(info.get("used_cpu_user", "nan")),
            int(info.get("total_net_input_bytes", 0)) + int(info.get("total_net_output_bytes", 0)))


def http_get(hostport, path, timeout=10):
    host, port = hostport.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def metric_sum(text, name):
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and (len(line) == len(name) or line[len(name)] in " {"):
            try:
                total += float(line.rsplit(" ", 1)[1])
            except ValueError:
                pass
    return total


def engine_scrapes(addresses):
    """{address: (time of the read, scrapes served so far)} for each replica that answered."""
    seen = {}
    for a in addresses:
        try:
            status, body = http_get(a, "/metrics", 5)
        except OSError:
            continue
        if status == 200:
            seen[a] = (time.time(), metric_sum(body.decode(errors="replace"),
                                              "switchyard_engine_metrics_scrapes_total"))
    return seen


def engine_rate(before, after):
    """Scrapes per second per replica, each over its own window; our own read is not counted."""
    rates = []
    for a, (t0, v0) in before.items():
        if a in after and after[a][0] > t0:
            t1, v1 = after[a]
            rates.append(max(0.0, v1 - v0 - 1) / (t1 - t0))
    return sum(rates) / len(rates) if rates else float("nan")


def gateway_metric(admin, name):
    try:
        status, body = http_get(admin, "/metrics", 10)
    except OSError:
        return float("nan")
    return metric_sum(body.decode(errors="replace"), name) if status == 200 else float("nan")


def signal_ages(admin):
    try:
        status, body = http_get(admin, "/debug/fleet", 20)
    except OSError:
        return []
    if status != 200:
        return []
    ages = []
    for model in json.loads(body).get("models", []):
        for r in model.get("replicas", []):
            age = (r.get("signals") or {}).get("age_ms")
            ages.append(float("inf") if age is None or age < 0 else float(age))
    return ages


def p99(values):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, math.ceil(0.99 * len(values)) - 1)]


class Load(threading.Thread):
    """Open-loop Poisson chat requests, round-robin over the gateways, for a bounded time."""

    def __init__(self, gateways, rate, seconds, seed):
        super().__init__(daemon=True)
        self.gateways, self.rate, self.seconds = gateways, rate, seconds
        self.rng = random.Random(seed)
        self.sent = self.ok = 0
        self.lock = threading.Lock()

    def one(self, gateway):
        body = json.dumps({"model": "llama2-7b", "max_tokens": self.rng.randint(8, 32),
                           "messages": [{"role": "user", "content": "tell me about gateways"}]})
        host, port = gateway.rsplit(":", 1)
        try:
            conn = http.client.HTTPConnection(host, int(port), timeout=30)
            conn.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
            r = conn.getresponse()
            r.read()
            conn.close()
            with self.lock:
                self.ok += r.status == 200
        except OSError:
            pass

    def run(self):
        start = time.time()
        t = 0.0
        i = 0
        threads = []
        while True:
            t += self.rng.expovariate(self.rate)
            if t > self.seconds:
                break
            delay = start + t - time.time()
            if delay > 0:
                time.sleep(delay)
            th = threading.Thread(target=self.one, args=(self.gateways[i % len(self.gateways)],),
                                  daemon=True)
            th.start()
            threads.append(th)
            self.sent += 1
            i += 1
        for th in threads:
            th.join(timeout=max(0.1, start + self.seconds + 30 - time.time()))


def write_config(path, engines, redis_port, gateway_id):
    lines = ["listen: 127.0.0.1:0", "admin_listen: 127.0.0.1:0", "workers: 1",
             "routing: { default_strategy: load-balance }",
             "telemetry: { scrape_interval_ms: 100 }",
             "shared_state: { backend: redis, address: 127.0.0.1:%d, gateway_id: %s }"
             % (redis_port, gateway_id),
             "models:", "  - name: llama2-7b", "    replicas:"]
    for i, address in enumerate(engines):
        lines.append("      - { address: %s, labels: { gpu: %s, engine: vllm } }"
                     % (address, GPUS[i % len(GPUS)]))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def run_gateways(args, procs, binary, engines, redis_port, count, load, work, label):
    gateways, admins, handles, logs = [], [], [], []
    for g in range(count):
        config = os.path.join(work, "gw-%s-%d.yaml" % (label, g))
        write_config(config, engines, redis_port, "gw-%d" % g)
        log = open(os.path.join(work, "gw-%s-%d.log" % (label, g)), "w+")
        proc = procs.start([binary, "gateway", "--config", config], stdout=subprocess.PIPE,
                           stderr=log)
        line = read_line_with(proc, "listening", 60)
        _, client, admin = line.split()
        drain(proc, log)
        gateways.append(client)
        admins.append(admin)
        handles.append(proc)
        logs.append(log)
    # Ready: every gateway answers /readyz (telemetry read once, shared state synced).
    deadline = time.time() + 60
    for admin in admins:
        while time.time() < deadline:
            try:
                if http_get(admin, "/readyz", 5)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
    time.sleep(args.warmup)
    return gateways, admins, handles, logs


def reload_ms(proc, log):
    log.flush()
    log.seek(0, os.SEEK_END)
    start_offset = log.tell()
    proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 30
    stamps = {}
    pattern = re.compile(r"^\[(\d+-\d+-\d+ \d+:\d+:(\d+\.\d+))\].*gateway: (SIGHUP, reloading|reloaded)")
    while time.time() < deadline and len(stamps) < 2:
        time.sleep(0.2)
        log.seek(start_offset)
        for line in log.read().splitlines():
            m = pattern.match(line)
            if m:
                key = "start" if m.group(3).startswith("SIGHUP") else "end"
                hms = m.group(1).split()[1].split(":")
                stamps[key] = int(hms[0]) * 3600 + int(hms[1]) * 60 + float(hms[2])
    if len(stamps) < 2:
        return float("nan")
    return (stamps["end"] - stamps["start"]) * 1000.0


def measure(args, procs, binary, label, engines, engine_procs, redis_port, count, load, work):
    gateways, admins, handles, logs = run_gateways(args, procs, binary, engines, redis_port,
                                                   count, load, work, label)
    sample = engines[:: max(1, len(engines) // args.sample_replicas)]
    loader = Load(gateways, args.light_rate, args.seconds, args.seed) if load == "light" else None
    e0 = engine_scrapes(sample)
    g0 = [gateway_metric(a, "switchyard_telemetry_scrapes_total") for a in admins]
    cpu0 = [cpu_seconds(h.pid) for h in handles]
    eng0 = [cpu_seconds(p.pid) for p in engine_procs]
    r0 = redis_info(redis_port)
    t0 = time.time()
    if loader:
        loader.start()
    ages = {a: [] for a in admins}
    samples = 4
    for i in range(samples):
        time.sleep(args.seconds / samples)
        for a in admins:
            ages[a].extend(signal_ages(a))
    elapsed = time.time() - t0
    cpu1 = [cpu_seconds(h.pid) for h in handles]
    eng1 = [cpu_seconds(p.pid) for p in engine_procs]
    r1 = redis_info(redis_port)
    g1 = [gateway_metric(a, "switchyard_telemetry_scrapes_total") for a in admins]
    e1 = engine_scrapes(sample)
    rss = max(rss_mib(h.pid) for h in handles)
    if loader:
        loader.join(timeout=60)
    reload = reload_ms(handles[0], logs[0])
    row = {
        "binary": label, "replicas": len(engines), "gateways": count, "load": load,
        "gateway_cpu_cores": sum(c1 - c0 for c0, c1 in zip(cpu0, cpu1)) / elapsed / count,
        "engine_cpu_cores": sum(c1 - c0 for c0, c1 in zip(eng0, eng1)) / elapsed,
        # Each sampled replica also served our own two reads: not counted.
        "engine_scrapes_per_s": engine_rate(e0, e1) * len(engines),
        "gateway_scrapes_per_s": sum(b - a for a, b in zip(g0, g1)) / elapsed,
        "redis_cpu_cores": (r1[0] - r0[0]) / elapsed,
        "redis_bytes_per_s": (r1[1] - r0[1]) / elapsed,
        "signal_age_p99_ms": max(p99(v) for v in ages.values()),
        "gateway_rss_mib": rss,
        "reload_ms": reload,
        "requests_ok": loader.ok if loader else 0,
        "requests_sent": loader.sent if loader else 0,
    }
    procs.stop(handles)
    for log in logs:
        log.close()
    return row


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    procs = Procs()
    binaries = [("after", args.after)] + ([("before", args.before)] if args.before else [])
    rows = []
    fields = ["binary", "replicas", "gateways", "load", "gateway_cpu_cores", "engine_cpu_cores",
              "engine_scrapes_per_s", "gateway_scrapes_per_s", "redis_cpu_cores",
              "redis_bytes_per_s", "signal_age_p99_ms", "gateway_rss_mib", "reload_ms",
              "requests_ok", "requests_sent"]
    csv_path = os.path.join(args.out, "control_plane.csv")
    work = tempfile.mkdtemp(prefix="switchyard-control-plane.")

    def on_signal(signum, frame):
        procs.stop()
        sys.exit(1)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        with open(csv_path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            for n in [int(x) for x in args.replicas.split(",")]:
                redis_port = free_port()
                redis = procs.start(["redis-server", "--port", str(redis_port), "--save", "",
                                     "--appendonly", "no", "--bind", "127.0.0.1"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                engine_procs, engines = [], []
                per = max(1, min(args.per_engine, (n + 1) // 2))
                for e in range(0, n, per):
                    path = os.path.join(work, "engines-%d-%d.yaml" % (n, e))
                    with open(path, "w") as ef:
                        ef.write("replicas:\n")
                        for i in range(e, min(n, e + per)):
                            ef.write("  - { listen: 127.0.0.1:0, gpu: %s, model: llama2-7b }\n"
                                     % GPUS[i % len(GPUS)])
                    proc = procs.start([args.after, "engine", "--replicas", path],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                    engines.extend(read_line_with(proc, "listening", 120).split()[1:])
                    engine_procs.append(proc)
                for _ in range(50):
                    try:
                        socket.create_connection(("127.0.0.1", redis_port), timeout=1).close()
                        break
                    except OSError:
                        time.sleep(0.1)
                for count in [int(x) for x in args.gateways.split(",")]:
                    for load in args.loads.split(","):
                        for label, binary in binaries:  # interleaved: before and after alternate
                            subprocess.run(["redis-cli", "-p", str(redis_port), "FLUSHALL"],
                                           stdout=subprocess.DEVNULL, check=False)
                            row = measure(args, procs, binary, label, engines, engine_procs,
                                          redis_port, count, load, work)
                            rows.append(row)
                            writer.writerow(row)
                            f.flush()
                            print(json.dumps(row), flush=True)
                procs.stop(engine_procs + [redis])
    finally:
        procs.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
