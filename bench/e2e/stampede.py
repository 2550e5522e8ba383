#!/usr/bin/env python3
"""Load, add-a-replica and sampling driver for bench/e2e/stampede.sh (one strategy per call).

Open-loop Poisson arrivals (seeded: every strategy gets the same arrival times and shapes),
spread round-robin over the gateways. At `warmup` seconds the new replica is added: the config
file with the extra replica is renamed over the live one and every gateway gets SIGHUP, so the
three reload within a few milliseconds of each other. Meanwhile every `sample_ms` each engine's
own /metrics is read (in flight = vllm:num_requests_running + vllm:num_requests_waiting), and
each gateway's /debug/fleet is read to see when it started routing to the new replica.

Writes <out>/<label>-samples.csv (engine-side in flight per replica over time),
<out>/<label>-requests.csv (one row per request) and prints one JSON summary line.
Standard library only; every thread is bounded by the run's deadline.
"""
import argparse
import http.client
import json
import os
import random
import signal
import statistics
import sys
import threading
import time

WORDS = ("switchyard routes chat requests across a fleet of replicas that run on different "
         "kinds of accelerators while keeping queues short and latency low").split()


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--label", required=True)
    p.add_argument("--gateways", required=True, help="client host:port,...")
    p.add_argument("--admins", required=True, help="admin host:port,... (same order)")
    p.add_argument("--gateway-pids", required=True, help="pid,... (same order), for SIGHUP")
    p.add_argument("--engines", required=True, help="host:port,...; the last one is the new one")
    p.add_argument("--config", required=True, help="the live gateway config file")
    p.add_argument("--config-after", required=True, help="the config with the new replica")
    p.add_argument("--rate", type=float, required=True, help="requests/s over all gateways")
    p.add_argument("--warmup", type=float, default=10)
    p.add_argument("--window", type=float, default=15, help="seconds measured after the add")
    p.add_argument("--sample-ms", type=float, default=100)
    p.add_argument("--prompt-words", default="20-120")
    p.add_argument("--max-tokens", default="64-256")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", required=True)
    return p.parse_args()


def span(text):
    lo, _, hi = text.partition("-")
    return int(lo), int(hi or lo)


class Run:
    def __init__(self, args):
        self.args = args
        self.gateways = args.gateways.split(",")
        self.admins = args.admins.split(",")
        self.pids = [int(p) for p in args.gateway_pids.split(",")]
        self.engines = args.engines.split(",")
        self.new = self.engines[-1]
        self.t0 = time.monotonic()
        self.t_add = None
        self.deadline = self.t0 + args.warmup + args.window + 60  # hard bound for stragglers
        self.stop_load = threading.Event()
        self.stop_sampling = threading.Event()
        self.lock = threading.Lock()
        self.records = []   # (sent, done, gateway, status, target)
        self.samples = []   # (t, [in flight per engine], [running], [waiting])
        self.seen_new = {}  # gateway index -> first time its /debug/fleet listed the new replica
        self.routed_new = {}  # gateway index -> first time its requests_total for it was > 0
        self.errors = 0

    def now(self):
        return time.monotonic() - self.t0

    # -- load ------------------------------------------------------------------------------------
    def schedule(self):
        """The whole arrival sequence, from the seed alone."""
        rng = random.Random(self.args.seed)
        pw, mt = span(self.args.prompt_words), span(self.args.max_tokens)
        t, out, i = 0.0, [], 0
        end = self.args.warmup + self.args.window
        while True:
            t += rng.expovariate(self.args.rate)
            if t >= end:
                return out
            words = rng.randint(*pw)
            prompt = " ".join(rng.choice(WORDS) for _ in range(words))
            out.append((t, i % len(self.gateways), prompt, rng.randint(*mt)))
            i += 1

    def request(self, sent_at, gw, prompt, max_tokens):
        host, port = self.gateways[gw].rsplit(":", 1)
        body = json.dumps({"model": "llama2-7b", "stream": False, "max_tokens": max_tokens,
                           "messages": [{"role": "user", "content": prompt}]})
        status, target = 0, ""
        try:
            timeout = max(1.0, self.deadline - time.monotonic())
            conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
            conn.request("POST", "/v1/chat/completions", body,
                         {"Content-Type": "application/json"})
            resp = conn.getresponse()
            resp.read()
            status, target = resp.status, resp.getheader("target-pod", "")
            conn.close()
        except (OSError, http.client.HTTPException):
            pass
        with self.lock:
            self.records.append((sent_at, self.now(), gw, status, target))

    def load(self):
        threads = []
        for at, gw, prompt, max_tokens in self.schedule():
            delay = at - self.now()
            if delay > 0 and self.stop_load.wait(delay):
                break
            th = threading.Thread(target=self.request, args=(self.now(), gw, prompt, max_tokens),
                                  daemon=True)
            th.start()
            threads.append(th)
        for th in threads:
            th.join(max(0.0, self.deadline - time.monotonic()))

    # -- sampling --------------------------------------------------------------------------------
    @staticmethod
    def get(conns, addr, path):
        for _ in range(2):  # once more on a fresh connection if a kept one was closed
            conn = conns.get(addr)
            if conn is None:
                host, port = addr.rsplit(":", 1)
                conn = conns[addr] = http.client.HTTPConnection(host, int(port), timeout=2)
            try:
                conn.request("GET", path)
                resp = conn.getresponse()
                data = resp.read().decode()
                return data if resp.status == 200 else None
            except (OSError, http.client.HTTPException):
                conn.close()
                conns.pop(addr, None)
        return None

    @staticmethod
    def gauge(text, name):
        total = None
        for line in text.splitlines():
            if line.startswith(name) and line[len(name)] in "{ ":
                total = (total or 0) + float(line.rsplit(" ", 1)[1])
        return total

    def sample_engines(self):
        conns, period = {}, self.args.sample_ms / 1000
        nxt = time.monotonic()
        while not self.stop_sampling.is_set():
            t = self.now()
            inflight, running, waiting = [], [], []
            for addr in self.engines:
                text = self.get(conns, addr, "/metrics")
                r = self.gauge(text, "vllm:num_requests_running") if text else None
                w = self.gauge(text, "vllm:num_requests_waiting") if text else None
                running.append(r)
                waiting.append(w)
                inflight.append(None if r is None or w is None else r + w)
            self.samples.append((t, inflight, running, waiting))
            nxt += period
            self.stop_sampling.wait(max(0.0, nxt - time.monotonic()))

    def watch_gateways(self):
        conns = {}
        while not self.stop_sampling.is_set() and len(self.routed_new) < len(self.admins):
            for i, addr in enumerate(self.admins):
                if i in self.routed_new:
                    continue
                text = self.get(conns, addr, "/debug/fleet")
                if not text:
                    continue
                for model in json.loads(text).get("models", []):
                    for rep in model.get("replicas", []):
                        if rep.get("name") != self.new:
                            continue
                        self.seen_new.setdefault(i, self.now())
                        if rep.get("requests_total", 0) > 0:
                            self.routed_new[i] = self.now()
            self.stop_sampling.wait(0.05)

    # -- the add ---------------------------------------------------------------------------------
    def add_replica(self):
        if self.stop_load.wait(self.args.warmup):
            return
        os.replace(self.args.config_after, self.args.config)
        self.t_add = self.now()
        for pid in self.pids:
            os.kill(pid, signal.SIGHUP)
        threading.Thread(target=self.watch_gateways, daemon=True).start()

    def run(self):
        sampler = threading.Thread(target=self.sample_engines, daemon=True)
        adder = threading.Thread(target=self.add_replica, daemon=True)
        sampler.start()
        adder.start()
        try:
            self.load()
        except KeyboardInterrupt:
            self.stop_load.set()
        self.stop_sampling.set()
        sampler.join(5)
        adder.join(5)


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    k = max(0, min(len(values) - 1, int(round(p / 100 * len(values) + 0.5)) - 1))
    return values[k]


def summarise(run):
    a = run.args
    t_add = run.t_add if run.t_add is not None else a.warmup
    n = len(run.engines)
    new = run.new
    summary = {"label": a.label, "rate": a.rate, "replicas_after": n, "fair_share": 1 / n,
               "t_add": round(t_add, 3)}
    recs = run.records
    summary["requests"] = len(recs)
    summary["errors"] = sum(1 for r in recs if r[3] != 200)
    for w in (2, 5, 10):
        inside = [r for r in recs if t_add <= r[0] < t_add + w and r[3] == 200]
        summary[f"share_{w}s"] = (sum(1 for r in inside if r[4] == new) / len(inside)
                                  if inside else float("nan"))
        summary[f"requests_{w}s"] = len(inside)
    # Per-second share of the new replica, from the moment of the add.
    per_second = []
    for s in range(int(a.window)):
        inside = [r for r in recs if t_add + s <= r[0] < t_add + s + 1 and r[3] == 200]
        per_second.append(round(sum(1 for r in inside if r[4] == new) / len(inside), 3)
                          if inside else None)
    summary["share_per_second"] = per_second
    # Engine-side in flight in [t_add, t_add + 5 s] and over the whole window.
    for label, w in (("5s", 5.0), ("window", a.window)):
        win = [s for s in run.samples if t_add <= s[0] <= t_add + w]
        new_vals = [s[1][-1] for s in win if s[1][-1] is not None]
        est = [v for s in win for v in s[1][:-1] if v is not None]
        est_peaks = [max((s[1][i] for s in win if s[1][i] is not None), default=float("nan"))
                     for i in range(n - 1)]
        med = statistics.median(est) if est else float("nan")
        peak = max(new_vals) if new_vals else float("nan")
        summary[f"new_peak_{label}"] = peak
        summary[f"fleet_median_{label}"] = med
        summary[f"ratio_{label}"] = peak / med if med and med == med and med > 0 else float("nan")
        summary[f"established_peak_max_{label}"] = max(est_peaks) if est_peaks else float("nan")
        summary[f"samples_{label}"] = len(win)
    # How long until the new replica carried as much as the established median (the end of the
    # burst for least-request; a slow start keeps it below for most of its ramp).
    summary["catch_up_s"] = next((round(s[0] - t_add, 2) for s in run.samples
                                  if t_add <= s[0] <= t_add + a.window and s[1][-1] is not None
                                  and [v for v in s[1][:-1] if v is not None]
                                  and s[1][-1] >= statistics.median(
                                      [v for v in s[1][:-1] if v is not None])), None)
    pre = [v for s in run.samples if t_add - 5 <= s[0] < t_add for v in s[1][:-1] if v is not None]
    summary["fleet_median_before"] = statistics.median(pre) if pre else float("nan")
    summary["goal_met"] = bool(summary["ratio_5s"] <= 1.5)
    # Reload timing: when each gateway listed the new replica and first routed to it.
    summary["gateway_listed_ms"] = [round((run.seen_new[i] - t_add) * 1000)
                                    if i in run.seen_new else None for i in range(len(run.admins))]
    summary["gateway_first_routed_ms"] = [round((run.routed_new[i] - t_add) * 1000)
                                          if i in run.routed_new else None
                                          for i in range(len(run.admins))]
    lat = [r[1] - r[0] for r in recs if r[3] == 200 and r[0] >= t_add]
    new_lat = [r[1] - r[0] for r in recs if r[3] == 200 and r[4] == new and t_add <= r[0] < t_add + 5]
    old_lat = [r[1] - r[0] for r in recs
               if r[3] == 200 and r[4] != new and t_add <= r[0] < t_add + 5]
    summary["e2e_p50_s"] = percentile(lat, 50)
    summary["e2e_p99_s"] = percentile(lat, 99)
    summary["new_e2e_p50_5s_s"] = percentile(new_lat, 50)
    summary["established_e2e_p50_5s_s"] = percentile(old_lat, 50)
    return summary


def write_csv(run, summary):
    a = run.args
    t_add = summary["t_add"]
    names = run.engines
    with open(os.path.join(a.out, f"{a.label}-samples.csv"), "w") as f:
        f.write("t_since_add_s," + ",".join(f"inflight_{i}" for i in range(len(names) - 1))
                + ",inflight_new,established_median,running_new,waiting_new\n")
        for t, inflight, running, waiting in run.samples:
            est = [v for v in inflight[:-1] if v is not None]
            cells = ["" if v is None else f"{v:g}" for v in inflight]
            med = f"{statistics.median(est):g}" if est else ""
            rn = "" if running[-1] is None else f"{running[-1]:g}"
            wn = "" if waiting[-1] is None else f"{waiting[-1]:g}"
            f.write(f"{t - t_add:.3f},{','.join(cells)},{med},{rn},{wn}\n")
    with open(os.path.join(a.out, f"{a.label}-requests.csv"), "w") as f:
        f.write("sent_since_add_s,done_since_add_s,gateway,status,target_pod,to_new\n")
        for sent, done, gw, status, target in sorted(run.records):
            f.write(f"{sent - t_add:.3f},{done - t_add:.3f},{gw},{status},{target},"
                    f"{int(target == run.new)}\n")


def main():
    args = parse_args()
    run = Run(args)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    run.run()
    summary = summarise(run)
    write_csv(run, summary)
    print(json.dumps(summary, allow_nan=True), flush=True)


if __name__ == "__main__":
    main()
