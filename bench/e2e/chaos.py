#!/usr/bin/env python3
"""Load generator, samplers and report for bench/e2e/chaos.sh (the chaos soak).

`chaos.py load ...` runs from the shared start time --t0 (epoch seconds) for --seconds:
  - open-loop Poisson arrivals, seeded (arrival times, streamed or not, prompt, max_tokens all
    come from --seed alone), a mix of streamed and non-streamed chat requests;
  - like a client behind an L4 load balancer: each new request goes to a gateway whose readiness
    probe (/readyz, or /healthz when the binary has no /readyz) answered 200 at its last poll
    (every --poll-ms); a connection refused or reset before the request was fully sent is
    retried on another gateway and counted as rerouted, not as a failure;
  - every --sample-ms, each engine's own /metrics (in flight = vllm:num_requests_running +
    vllm:num_requests_waiting); an engine that does not answer within 200 ms (stopped, down) is
    skipped;
  - every second, each gateway's VmRSS from /proc (its pid from <pid-dir>/gatewayN.pid).
  Writes requests.csv, engine-samples.csv, rss.csv and readiness.csv under --out.

`chaos.py report ...` reads those files and the driver's events.csv and sanitizer.txt, prints
the tables and writes summary.csv, failures.csv, violations.csv, events-per-type.csv and the
plot data (inflight-per-second.csv, outcomes-per-second.csv).

Standard library only; every thread is bounded by the run's deadline.
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
import sys
import threading
import time

WORDS = ("switchyard routes chat requests across a fleet of replicas that run on different "
         "kinds of accelerators while keeping queues short and latency low").split()
GAUGE = re.compile(rb"^vllm:num_requests_(running|waiting)(?:\{[^}]*\})? (\S+)", re.M)
DETAIL_CHARS = 300


def redis_command(sock_file, sock, *args):
    """One RESP command and its reply (strings, integers, arrays, nil), for the evidence dump."""
    sock.sendall(b"".join([f"*{len(args)}\r\n".encode()] +
                          [f"${len(a.encode())}\r\n{a}\r\n".encode() for a in args]))

    def read():
        line = sock_file.readline().rstrip(b"\r\n")
        kind, rest = line[:1], line[1:].decode()
        if kind in (b"+", b"-"):
            return rest
        if kind == b":":
            return int(rest)
        if kind == b"$":
            if int(rest) < 0:
                return None
            data = sock_file.read(int(rest) + 2)[:-2]
            return data.decode(errors="replace")
        if kind == b"*":
            return [read() for _ in range(max(0, int(rest)))]
        return line.decode(errors="replace")
    return read()


def redis_dump(addr):
    """The shared state as Redis holds it now: every key with its value (hashes field by field)."""
    host, port = addr_split(addr)
    try:
        with socket.create_connection((host, port), timeout=1) as sock:
            f = sock.makefile("rb")
            lines = [f"TIME {redis_command(f, sock, 'TIME')}"]
            for key in sorted(redis_command(f, sock, "KEYS", "*") or []):
                kind = redis_command(f, sock, "TYPE", key)
                if kind == "hash":
                    lines.append(f"{key} = {redis_command(f, sock, 'HGETALL', key)}")
                elif kind == "string":
                    lines.append(f"{key} = {redis_command(f, sock, 'GET', key)}")
                else:
                    lines.append(f"{key} ({kind})")
            return "\n".join(lines) + "\n"
    except OSError as e:
        return f"redis {addr}: {type(e).__name__}: {e}\n"


def span(text):
    lo, _, hi = text.partition("-")
    return int(lo), int(hi or lo)


def addr_split(addr):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


# ----------------------------------------------------------------------------------------------
# load

class Load:
    def __init__(self, a):
        self.a = a
        self.gateways = a.gateways.split(",")
        self.admins = a.admins.split(",")
        self.engines = a.engines.split(",")
        self.t0 = a.t0
        self.end = a.t0 + a.seconds
        self.deadline = self.end + a.drain  # hard bound for every thread
        self.stop_load = threading.Event()
        self.stop_sampling = threading.Event()
        self.lock = threading.Lock()
        self.records = []
        self.samples = []   # (t, engine, running, waiting)
        self.rss = []       # (t, gateway, pid, kB)
        self.ready = [False] * len(self.gateways)
        self.ready_log = []  # (t, gateway, ready, how)
        self.no_readyz = [False] * len(self.gateways)

    # -- arrivals ----------------------------------------------------------------------------
    def schedule(self):
        """The whole arrival sequence, from the seed alone."""
        a = self.a
        rng = random.Random(a.seed)
        pw, mt = span(a.prompt_words), span(a.max_tokens)
        t, out = 0.0, []
        while len(out) < a.max_requests:
            t += rng.expovariate(a.rate)
            if t >= a.seconds:
                break
            stream = rng.random() < a.stream_fraction
            words = rng.randint(*pw)
            prompt = " ".join(rng.choice(WORDS) for _ in range(words))
            out.append((t, len(out), stream, prompt, rng.randint(*mt)))
        return out

    def pick(self, seq, avoid):
        ready = [g for g, ok in enumerate(self.ready) if ok and g not in avoid]
        return ready[seq % len(ready)] if ready else None

    def request(self, seq, stream, prompt, max_tokens):
        rec = {"id": seq, "stream": int(stream), "max_tokens": max_tokens, "sent": time.time(),
               "first_event": "", "done": "", "gateway": "", "status": 0, "outcome": "failed",
               "rerouted": 0, "target": "", "detail": ""}
        body = {"model": "llama2-7b", "max_tokens": max_tokens, "stream": stream,
                "messages": [{"role": "user", "content": prompt}]}
        body = json.dumps(body).encode()
        avoid, reasons = set(), []
        conn = None
        while True:
            if time.time() > self.deadline:
                rec["detail"] = "no gateway took the request before the deadline; " + \
                    "; ".join(reasons)
                return self.finish(rec)
            g = self.pick(seq + rec["rerouted"], avoid)
            if g is None:
                if avoid:
                    avoid.clear()
                if time.time() - rec["sent"] > 10:
                    rec["detail"] = "no gateway was ready for 10 s; " + "; ".join(reasons)
                    return self.finish(rec)
                time.sleep(0.05)
                continue
            host, port = addr_split(self.gateways[g])
            conn = http.client.HTTPConnection(host, port, timeout=self.a.request_timeout)
            try:
                conn.request("POST", "/v1/chat/completions", body,
                             {"Content-Type": "application/json",
                              "x-request-id": f"chaos-{seq}"})
                break  # fully sent
            except OSError as e:  # refused, reset or timed out before the request was sent
                conn.close()
                rec["rerouted"] += 1
                reasons.append(f"gateway{g}: {type(e).__name__}")
                avoid.add(g)
                if rec["rerouted"] > 20:
                    rec["detail"] = "rerouted 20 times; " + "; ".join(reasons[-5:])
                    return self.finish(rec)
        rec["gateway"] = g
        try:
            resp = conn.getresponse()
            rec["status"] = resp.status
            rec["target"] = resp.getheader("target-pod", "") or ""
            if resp.status != 200:
                rec["detail"] = resp.read().decode(errors="replace")
            elif not stream:
                data = resp.read()
                try:
                    ok = bool(json.loads(data).get("choices"))
                except ValueError:
                    ok = False
                if ok:
                    rec["outcome"] = "completed"
                else:
                    rec["detail"] = "200 without choices: " + data.decode(errors="replace")
            else:
                self.read_stream(resp, rec)
        except (OSError, http.client.HTTPException) as e:
            what = f"{type(e).__name__}: {e}"
            if rec["first_event"]:
                rec["outcome"] = "cut"
                rec["detail"] = what
            else:
                rec["detail"] = ("after the request was sent: " + what) if not rec["status"] \
                    else f"status {rec['status']}, before the first event: " + what
        finally:
            conn.close()
        if reasons:
            rec["detail"] = (rec["detail"] + " | rerouted: " + "; ".join(reasons)).strip(" |")
        if rec["outcome"] == "failed":
            self.capture(g, seq)
        return self.finish(rec)

    def capture(self, g, seq):
        """Evidence of a failure: the gateway's fleet view and newest decisions, right now."""
        host, port = addr_split(self.admins[g])
        folder = os.path.join(self.a.out, "evidence")
        os.makedirs(folder, exist_ok=True)
        for name, path in (("fleet.json", "/debug/fleet"),
                           ("decisions.json", "/debug/decisions?limit=64"),
                           ("metrics.txt", "/metrics")):
            try:
                conn = http.client.HTTPConnection(host, port, timeout=1)
                conn.request("GET", path)
                data = conn.getresponse().read()
                conn.close()
            except (OSError, http.client.HTTPException) as e:
                data = f"{type(e).__name__}: {e}".encode()
            with open(os.path.join(folder, f"chaos-{seq}-gateway{g}-{name}"), "wb") as f:
                f.write(data)
        if self.a.redis:
            with open(os.path.join(folder, f"chaos-{seq}-redis.txt"), "w") as f:
                f.write(redis_dump(self.a.redis))

    def read_stream(self, resp, rec):
        last_error = ""
        while True:
            line = resp.readline()
            if not line:
                break
            if not line.startswith(b"data:"):
                continue
            payload = line[5:].strip()
            if payload == b"[DONE]":
                rec["outcome"] = "completed" if rec["first_event"] else "failed"
                if not rec["first_event"]:
                    rec["detail"] = "[DONE] without any event"
                return
            if not rec["first_event"]:
                rec["first_event"] = time.time()
            if b'"error"' in payload:
                last_error = payload.decode(errors="replace")
        if rec["first_event"]:
            rec["outcome"] = "cut"
            rec["detail"] = "stream ended without [DONE]" + \
                (": " + last_error if last_error else "")
        else:
            rec["detail"] = "status 200, stream closed before its first event" + \
                (": " + last_error if last_error else "")

    def finish(self, rec):
        rec["done"] = time.time()
        rec["detail"] = " ".join(str(rec["detail"]).split())[:DETAIL_CHARS]
        with self.lock:
            self.records.append(rec)

    def load(self):
        threads = []
        for at, seq, stream, prompt, max_tokens in self.schedule():
            delay = self.t0 + at - time.time()
            if delay > 0 and self.stop_load.wait(delay):
                break
            if self.stop_load.is_set():
                break
            th = threading.Thread(target=self.request, args=(seq, stream, prompt, max_tokens),
                                  daemon=True)
            th.start()
            threads.append(th)
        for th in threads:  # self.deadline moves closer when the run is stopped
            while th.is_alive() and time.time() < self.deadline:
                th.join(0.2)
        return sum(1 for th in threads if th.is_alive())

    # -- readiness ---------------------------------------------------------------------------
    def poll_gateway(self, g):
        host, port = addr_split(self.admins[g])
        period = self.a.poll_ms / 1000
        while not self.stop_sampling.is_set():
            path = "/healthz" if self.no_readyz[g] else "/readyz"
            status, how = 0, ""
            try:
                conn = http.client.HTTPConnection(host, port, timeout=0.5)
                conn.request("GET", path)
                resp = conn.getresponse()
                resp.read()
                status = resp.status
                conn.close()
            except (OSError, http.client.HTTPException) as e:
                how = type(e).__name__
            if status == 404 and path == "/readyz":
                self.no_readyz[g] = True  # a binary without /readyz: liveness is all there is
                continue
            ok = status == 200
            if ok != self.ready[g] or not self.ready_log:
                self.ready_log.append((time.time(), g, int(ok), f"{path} {status or how}"))
            self.ready[g] = ok
            self.stop_sampling.wait(period)

    # -- engines -----------------------------------------------------------------------------
    def sample_engine(self, i):
        host, port = addr_split(self.engines[i])
        period = self.a.sample_ms / 1000
        conn = None
        nxt = time.monotonic()
        while not self.stop_sampling.is_set():
            t = time.time()
            text = None
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(host, port, timeout=0.2)
                conn.request("GET", "/metrics")
                resp = conn.getresponse()
                data = resp.read()
                if resp.status == 200:
                    text = data
            except (OSError, http.client.HTTPException):
                if conn is not None:
                    conn.close()
                conn = None
            if text is not None:
                values = {b"running": 0.0, b"waiting": 0.0}
                seen = set()
                for name, value in GAUGE.findall(text):
                    values[name] += float(value)
                    seen.add(name)
                if len(seen) == 2:
                    self.samples.append((t, i, values[b"running"], values[b"waiting"]))
            nxt += period
            now = time.monotonic()
            if nxt < now:
                nxt = now  # late (a slow answer): no catching up in a burst
            self.stop_sampling.wait(nxt - now)

    # -- gateway memory ----------------------------------------------------------------------
    def sample_rss(self):
        while not self.stop_sampling.is_set():
            t = time.time()
            for g in range(len(self.gateways)):
                try:
                    with open(os.path.join(self.a.pid_dir, f"gateway{g}.pid")) as f:
                        pid = int(f.read().strip())
                    with open(f"/proc/{pid}/status") as f:
                        kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
                    self.rss.append((t, g, pid, kb))
                except (OSError, ValueError, StopIteration):
                    pass
            self.stop_sampling.wait(1.0)

    def run(self):
        helpers = [threading.Thread(target=self.poll_gateway, args=(g,), daemon=True)
                   for g in range(len(self.gateways))]
        helpers += [threading.Thread(target=self.sample_engine, args=(i,), daemon=True)
                    for i in range(len(self.engines))]
        helpers.append(threading.Thread(target=self.sample_rss, daemon=True))
        for th in helpers:
            th.start()
        unfinished = self.load()
        self.stop_sampling.set()
        for th in helpers:
            th.join(2)
        return unfinished

    def write(self, unfinished):
        out = self.a.out
        with open(os.path.join(out, "requests.csv"), "w", newline="") as f:
            keys = ["id", "stream", "max_tokens", "sent", "first_event", "done", "gateway",
                    "status", "outcome", "rerouted", "target", "detail"]
            w = csv.DictWriter(f, keys)
            w.writeheader()
            with self.lock:
                for r in sorted(self.records, key=lambda r: r["id"]):
                    w.writerow(r)
        with open(os.path.join(out, "engine-samples.csv"), "w") as f:
            f.write("t,engine,running,waiting,inflight\n")
            for t, i, r, wt in sorted(self.samples):
                f.write(f"{t:.3f},{i},{r:g},{wt:g},{r + wt:g}\n")
        with open(os.path.join(out, "rss.csv"), "w") as f:
            f.write("t,gateway,pid,rss_kb\n")
            for t, g, pid, kb in self.rss:
                f.write(f"{t:.3f},{g},{pid},{kb}\n")
        with open(os.path.join(out, "readiness.csv"), "w") as f:
            f.write("t,gateway,ready,probe\n")
            for t, g, ok, how in sorted(self.ready_log):
                f.write(f"{t:.3f},{g},{ok},{how}\n")
        with open(os.path.join(out, "load.json"), "w") as f:
            json.dump({"t0": self.t0, "seconds": self.a.seconds, "rate": self.a.rate,
                       "scheduled": len(self.schedule()), "unfinished": unfinished,
                       "probe": ["/healthz" if n else "/readyz" for n in self.no_readyz]}, f)


def run_load(a):
    load = Load(a)

    def stop(*_):  # stopped early: requests in flight get 2 s, then what is known is written
        load.deadline = min(load.deadline, time.time() + 2)
        load.stop_load.set()
    signal.signal(signal.SIGTERM, stop)
    unfinished = load.run()
    load.write(unfinished)


# ----------------------------------------------------------------------------------------------
# report

def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class Events:
    """The driver's chaos events, to name the one in force at a moment."""

    def __init__(self, rows, t0):
        self.t0 = t0
        self.rows = sorted(({"start": float(r["start"]), "end": float(r["end"]), "type": r["type"],
                             "target": r["target"], "detail": r["detail"]} for r in rows),
                           key=lambda e: e["start"])

    def at(self, t):
        last = None
        for e in self.rows:
            if e["start"] <= t:
                last = e
            else:
                break
        if last is None:
            return "none (before the first event)"
        name = f"{last['type']} {last['target']}".strip()
        since = t - last["start"]
        state = "in progress" if t <= last["end"] else f"ended {t - last['end']:.1f} s before"
        return f"{name} at t={last['start'] - self.t0:.1f} s (+{since:.1f} s, {state})"


class GatewayLogs:
    """Warnings and errors from every gateway's log (spdlog, local time), by time."""

    STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\.(\d{3})\] "
                       r"\[(warning|error|critical)\]")

    def __init__(self, folder):
        self.lines = []
        if not os.path.isdir(folder):
            return
        for name in sorted(os.listdir(folder)):
            if not name.startswith("gateway"):
                continue
            with open(os.path.join(folder, name), errors="replace") as f:
                for line in f:
                    m = self.STAMP.match(line)
                    if m:
                        t = time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) + \
                            int(m.group(2)) / 1000
                        self.lines.append((t, name.split(".")[0] + ": " + line.rstrip()))
        self.lines.sort()

    def near(self, t, before=3.0, after=0.5, most=6):
        found = [text for lt, text in self.lines if t - before <= lt <= t + after]
        return found[-most:]


def captured_decision(out, r):
    """The gateway's decision record of a failed request, from the evidence the load captured."""
    path = os.path.join(out, "evidence",
                        f"chaos-{r['id']}-gateway{r['gateway']}-decisions.json")
    try:
        decisions = json.load(open(path)).get("decisions", [])
    except (OSError, ValueError, AttributeError):
        return ""
    for d in decisions:
        if d.get("request_id") == f"chaos-{r['id']}":
            return json.dumps(d, separators=(",", ":"))[:1200]
    return ""


def captured_metrics(out, r):
    """The gateway's shared-state and rejection metrics at the failure, from the evidence."""
    path = os.path.join(out, "evidence", f"chaos-{r['id']}-gateway{r['gateway']}-metrics.txt")
    keep = re.compile(r"^switchyard_(shared_state_(connected|degraded_total|live_gateways|"
                      r"reconnects_total|sync_failures_total)|rejected_requests_total)")
    try:
        return [l.rstrip() for l in open(path, errors="replace") if keep.match(l)]
    except OSError:
        return []


def linear_slope(points):
    """Least-squares slope of (x, y) points; None for fewer than 3."""
    if len(points) < 3:
        return None
    n = len(points)
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    if sxx == 0:
        return None
    return sum((p[0] - mx) * (p[1] - my) for p in points) / sxx


def run_report(a):
    out = a.out
    meta = json.load(open(os.path.join(out, "load.json")))
    t0, seconds = meta["t0"], meta["seconds"]
    engines = a.engine_names.split(",")
    gpus = a.engine_gpus.split(",")
    reqs = read_csv(os.path.join(out, "requests.csv"))
    events = Events(read_csv(os.path.join(out, "events.csv")), t0)
    limit = a.limit
    lines = []

    def p(text=""):
        lines.append(text)

    # -- requests ------------------------------------------------------------------------------
    sent = len(reqs)
    streamed = sum(1 for r in reqs if r["stream"] == "1")
    completed = sum(1 for r in reqs if r["outcome"] == "completed")
    failed = [r for r in reqs if r["outcome"] == "failed"]
    cut = [r for r in reqs if r["outcome"] == "cut"]
    rerouted = [r for r in reqs if int(r["rerouted"]) > 0]
    reroutes = sum(int(r["rerouted"]) for r in reqs)
    by_status = {}
    for r in failed:
        by_status[r["status"]] = by_status.get(r["status"], 0) + 1

    # -- engine samples ------------------------------------------------------------------------
    per_engine = [{"n": 0, "sum": 0.0, "peak": 0.0, "above": 0} for _ in engines]
    violations = []
    per_second = {}
    samples_path = os.path.join(out, "engine-samples.csv")
    with open(samples_path) as f:
        next(f)
        for line in f:
            t, i, _, _, v = line.rstrip("\n").split(",")
            t, i, v = float(t), int(i), float(v)
            e = per_engine[i]
            e["n"] += 1
            e["sum"] += v
            e["peak"] = max(e["peak"], v)
            if v > limit:
                e["above"] += 1
                violations.append((t, i, v))
            s = int(t - t0)
            row = per_second.setdefault(s, [None] * len(engines))
            row[i] = v if row[i] is None else max(row[i], v)
    span_s = (max(per_second) - min(per_second) + 1) if per_second else 1
    expected_per_engine = span_s * 1000 / a.sample_ms

    # -- gateway RSS ---------------------------------------------------------------------------
    rss_rows = read_csv(os.path.join(out, "rss.csv"))
    restarts = {}
    for e in events.rows:
        if e["type"] == "gateway-restart":
            restarts[e["target"]] = restarts.get(e["target"], 0) + 1
    rss = {}
    for r in rss_rows:
        rss.setdefault(int(r["gateway"]), []).append((float(r["t"]), int(r["pid"]),
                                                      int(r["rss_kb"])))
    rss_summary = []
    for g in sorted(rss):
        series = rss[g]
        pids = sorted({pid for _, pid, _ in series})
        after = [(t, kb) for t, _, kb in series if t0 + a.warmup <= t <= t0 + seconds]
        if not after:
            continue
        start_kb, end_kb = after[0][1], after[-1][1]
        slope = linear_slope([((t - t0) / 60, kb / 1024) for t, kb in after])
        rss_summary.append({"gateway": g, "restarted": len(pids) > 1 or
                            restarts.get(f"gateway{g}", 0) > 0,
                            "start_mib": start_kb / 1024, "end_mib": end_kb / 1024,
                            "max_mib": max(kb for _, kb in after) / 1024,
                            "slope_mib_per_min": slope, "processes": len(pids)})

    # -- sanitizers ----------------------------------------------------------------------------
    san_lines = []
    san_path = os.path.join(out, "sanitizer.txt")
    if os.path.exists(san_path):
        san_lines = [l.rstrip("\n") for l in open(san_path) if l.strip()]
    san_counts = {k: sum(1 for l in san_lines if k in l)
                  for k in ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer")}

    # -- events --------------------------------------------------------------------------------
    types = ["engine-crash", "engine-hang", "redis-restart", "gateway-restart", "replica-remove",
             "replica-add"]
    counts = {k: 0 for k in types}
    durations = {k: [] for k in types}
    for e in events.rows:
        counts[e["type"]] = counts.get(e["type"], 0) + 1
        durations.setdefault(e["type"], []).append(e["end"] - e["start"])

    def kind(r):
        return events.at(float(r["done"]))

    logs = GatewayLogs(os.path.join(out, "logs"))

    blame = {}
    for r in failed + cut:
        ev = kind(r).split(" ")[0]
        blame.setdefault(ev, [0, 0])[0 if r["outcome"] == "failed" else 1] += 1

    # -- print ---------------------------------------------------------------------------------
    worst = max((e["peak"] for e in per_engine), default=0)
    never = [s for s in rss_summary if not s["restarted"]]
    p()
    p(f"Chaos soak: {seconds:.0f} s of load, {len(events.rows)} chaos events, limit "
      f"max_inflight_per_replica {limit}")
    probes = sorted(set(meta.get("probe", [])))
    p(f"Readiness probe used by the load generator: {', '.join(probes)}"
      + (" (this binary has no /readyz)" if probes == ["/healthz"] else ""))
    p()
    p("| measure | value | goal |")
    p("|---|---|---|")
    p(f"| requests sent | {sent} ({streamed} streamed, {sent - streamed} not) | |")
    p(f"| completed | {completed} ({100 * completed / max(1, sent):.2f} %) | |")
    p(f"| rerouted before the request was sent (refused/reset) | {len(rerouted)} requests, "
      f"{reroutes} attempts | (not failures) |")
    p(f"| **failures before streaming started** | **{len(failed)}**"
      + (f" ({', '.join(f'{k}: {v}' for k, v in sorted(by_status.items()))} by status; 0 = no "
         "answer)" if failed else "") + f" | 0 ({'met' if not failed else 'missed'}) |")
    p(f"| streams cut after they started | {len(cut)} of {streamed} streamed | allowed |")
    p(f"| engine in-flight peak (highest engine) | {worst:g} | <= {limit} "
      f"({'met' if worst <= limit else 'missed'}) |")
    p(f"| samples above the limit | {len(violations)} of "
      f"{sum(e['n'] for e in per_engine)} | 0 |")
    for s in never:
        growth = s["end_mib"] - s["start_mib"]
        slope = s["slope_mib_per_min"]
        p(f"| RSS gateway{s['gateway']} (never restarted), after warm-up → end | "
          f"{s['start_mib']:.1f} → {s['end_mib']:.1f} MiB ({growth:+.1f} MiB, "
          f"{100 * growth / max(1e-9, s['start_mib']):+.1f} %; max {s['max_mib']:.1f}; trend "
          f"{'n/a' if slope is None else f'{slope:+.2f} MiB/min'}) | flat |")
    if not never:
        p("| RSS of a never-restarted gateway | none was left unrestarted | flat |")
    unexpected = []
    if os.path.exists(os.path.join(out, "unexpected.txt")):
        unexpected = [l.strip() for l in open(os.path.join(out, "unexpected.txt")) if l.strip()]
    p(f"| processes that died or exited badly on their own | {len(unexpected)}"
      + (": " + "; ".join(unexpected) if unexpected else "") + " | 0 |")
    if a.sanitized:
        p(f"| sanitizer reports (ASan / UBSan / LSan lines) | "
          f"{san_counts['ERROR: AddressSanitizer']} / {san_counts['runtime error:']} / "
          f"{san_counts['LeakSanitizer']} | 0 |")
    else:
        p(f"| sanitizer reports | not a sanitizer build ({sum(san_counts.values())} lines) | |")
    p()
    p("Engines (in flight = vllm:num_requests_running + vllm:num_requests_waiting, sampled every "
      f"{a.sample_ms:g} ms; a stopped or down engine is skipped)")
    p()
    p("| engine | GPU | samples | of expected | mean in flight | peak | samples above "
      f"{limit} |")
    p("|---|---|---|---|---|---|---|")
    for i, e in enumerate(per_engine):
        p(f"| {engines[i]} | {gpus[i]} | {e['n']} | {100 * e['n'] / expected_per_engine:.0f} % "
          f"| {e['sum'] / max(1, e['n']):.2f} | {e['peak']:g} | {e['above']} |")
    p()
    p("Gateway RSS (VmRSS, from the end of the warm-up)")
    p()
    p("| gateway | restarted | processes | start MiB | end MiB | max MiB | trend MiB/min |")
    p("|---|---|---|---|---|---|---|")
    for s in rss_summary:
        slope = s["slope_mib_per_min"]
        p(f"| gateway{s['gateway']} | {'yes' if s['restarted'] else 'no'} | {s['processes']} | "
          f"{s['start_mib']:.1f} | {s['end_mib']:.1f} | {s['max_mib']:.1f} | "
          f"{'n/a' if slope is None else f'{slope:+.2f}'} |")
    p()
    p("Chaos events")
    p()
    p("| event | count | median duration s | failures / cut streams seen while it was the "
      "latest event |")
    p("|---|---|---|---|")
    for k in types:
        d = sorted(durations.get(k, []))
        med = f"{d[len(d) // 2]:.2f}" if d else "-"
        f_, c_ = blame.get(k, [0, 0])
        p(f"| {k} | {counts.get(k, 0)} | {med} | {f_} / {c_} |")
    if "none" in blame:
        p(f"| (before the first event) | | | {blame['none'][0]} / {blame['none'][1]} |")
    p()
    if failed:
        p(f"Failures before streaming started ({len(failed)}): t = seconds since the start")
        for r in sorted(failed, key=lambda r: float(r["done"])):
            p(f"  #{r['id']} {'stream' if r['stream'] == '1' else 'plain '} gateway{r['gateway']} "
              f"sent t={float(r['sent']) - t0:.2f} failed t={float(r['done']) - t0:.2f} "
              f"status {r['status']} target {r['target'] or '-'}: {r['detail']}")
            p(f"      event: {kind(r)}")
            for line in logs.near(float(r["done"])):
                p(f"      log {line}")
            decision = captured_decision(out, r)
            if decision:
                p(f"      decision (x-request-id chaos-{r['id']}): {decision}")
            for line in captured_metrics(out, r):
                p(f"      metric {line}")
            p(f"      evidence: {out}/evidence/chaos-{r['id']}-*")
    else:
        p("Failures before streaming started: none")
    if cut:
        p(f"Streams cut after they started ({len(cut)}):")
        for r in sorted(cut, key=lambda r: float(r["done"])):
            p(f"  #{r['id']} gateway{r['gateway']} target {r['target'] or '-'} "
              f"t={float(r['done']) - t0:.2f}: {r['detail']}  [{kind(r)}]")
    if violations:
        p(f"Samples above the limit ({len(violations)}; gateway warnings near the first sample "
          "of each episode):")
        last = {}
        for t, i, v in violations:
            p(f"  t={t - t0:.3f} s {engines[i]} ({gpus[i]}) in flight {v:g} > {limit}  "
              f"[{events.at(t)}]")
            if t - last.get(i, -1e9) > 1.0:
                for line in logs.near(t):
                    p(f"      log {line}")
            last[i] = t
    else:
        p(f"Samples above the limit: none")
    if a.sanitized and san_lines:
        p(f"Sanitizer lines ({len(san_lines)}; full logs under {out}/logs):")
        for l in san_lines[:200]:
            p("  " + l)
    if meta.get("unfinished"):
        p(f"Requests still unfinished at the drain deadline: {meta['unfinished']} (counted as "
          "failures above)")
    print("\n".join(lines))
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")

    # -- CSV -----------------------------------------------------------------------------------
    with open(os.path.join(out, "summary.csv"), "w") as f:
        keys = ["seconds", "events", "limit", "sent", "streamed", "completed", "rerouted_requests",
                "reroute_attempts", "failures_before_stream", "streams_cut", "peak_inflight",
                "samples_above_limit", "sanitizer_lines"]
        vals = [f"{seconds:g}", len(events.rows), limit, sent, streamed, completed,
                len(rerouted), reroutes, len(failed), len(cut), f"{worst:g}", len(violations),
                len(san_lines) if a.sanitized else ""]
        for s in never:
            keys += [f"rss_gateway{s['gateway']}_start_mib", f"rss_gateway{s['gateway']}_end_mib"]
            vals += [f"{s['start_mib']:.1f}", f"{s['end_mib']:.1f}"]
        f.write(",".join(keys) + "\n" + ",".join(str(v) for v in vals) + "\n")
    with open(os.path.join(out, "failures.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "stream", "gateway", "sent_s", "done_s", "status", "outcome", "target",
                    "detail", "event"])
        for r in sorted(failed + cut, key=lambda r: float(r["done"])):
            w.writerow([r["id"], r["stream"], r["gateway"], f"{float(r['sent']) - t0:.3f}",
                        f"{float(r['done']) - t0:.3f}", r["status"], r["outcome"], r["target"],
                        r["detail"], kind(r)])
    with open(os.path.join(out, "violations.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_s", "engine", "gpu", "inflight", "limit", "event"])
        for t, i, v in violations:
            w.writerow([f"{t - t0:.3f}", engines[i], gpus[i], f"{v:g}", limit, events.at(t)])
    with open(os.path.join(out, "events-per-type.csv"), "w") as f:
        f.write("event,count,median_duration_s,failures,cut_streams\n")
        for k in types:
            d = sorted(durations.get(k, []))
            f_, c_ = blame.get(k, [0, 0])
            f.write(f"{k},{counts.get(k, 0)},{d[len(d) // 2] if d else ''},{f_},{c_}\n")
    # Plot data: per second, each engine's highest sample; outcomes by the second they ended.
    with open(os.path.join(out, "inflight-per-second.csv"), "w") as f:
        f.write("t_s," + ",".join(f"{engines[i]} ({gpus[i]})" for i in range(len(engines)))
                + "\n")
        for s in sorted(per_second):
            f.write(f"{s}," + ",".join("" if v is None else f"{v:g}" for v in per_second[s])
                    + "\n")
    outcomes = {}
    bucket = max(1, int(seconds // 120))
    for r in reqs:
        s = int((float(r["done"]) - t0) // bucket) * bucket
        o = outcomes.setdefault(s, [0, 0, 0, 0])
        o[{"completed": 0, "failed": 1, "cut": 2}[r["outcome"]]] += 1
        if int(r["rerouted"]) > 0:
            o[3] += 1
    with open(os.path.join(out, "outcomes-per-second.csv"), "w") as f:
        f.write(f"t_s,completed per {bucket} s,failed,cut,rerouted\n")
        for s in sorted(outcomes):
            f.write(f"{s}," + ",".join(str(v) for v in outcomes[s]) + "\n")
    with open(os.path.join(out, "events-plot.csv"), "w") as f:
        f.write("t_s,type,target,type_index\n")  # type_index: the order of the report's table
        for e in events.rows:
            index = types.index(e["type"]) if e["type"] in types else len(types)
            f.write(f"{e['start'] - t0:.2f},{e['type']},{e['target']},{index}\n")
    with open(os.path.join(out, "rss-plot.csv"), "w") as f:
        f.write("t_s,gateway,rss_mib\n")
        for g in sorted(rss):
            for t, _, kb in rss[g]:
                f.write(f"{t - t0:.1f},{g},{kb / 1024:.2f}\n")
            f.write("\n\n")  # one gnuplot data block per gateway
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    ld = sub.add_parser("load")
    ld.add_argument("--gateways", required=True, help="client host:port,...")
    ld.add_argument("--admins", required=True, help="admin host:port,... (same order)")
    ld.add_argument("--engines", required=True, help="engine host:port,...")
    ld.add_argument("--pid-dir", required=True, help="holds gatewayN.pid, kept current")
    ld.add_argument("--redis", default="", help="host:port, dumped as evidence of a failure")
    ld.add_argument("--t0", type=float, required=True, help="start, epoch seconds")
    ld.add_argument("--seconds", type=float, required=True)
    ld.add_argument("--drain", type=float, default=90, help="bound for requests after the end")
    ld.add_argument("--rate", type=float, required=True)
    ld.add_argument("--seed", type=int, default=1)
    ld.add_argument("--stream-fraction", type=float, default=0.5)
    ld.add_argument("--prompt-words", default="10-80")
    ld.add_argument("--max-tokens", default="16-192")
    ld.add_argument("--max-requests", type=int, default=20000)
    ld.add_argument("--request-timeout", type=float, default=60)
    ld.add_argument("--sample-ms", type=float, default=20)
    ld.add_argument("--poll-ms", type=float, default=200)
    ld.add_argument("--out", required=True)
    rp = sub.add_parser("report")
    rp.add_argument("--out", required=True)
    rp.add_argument("--limit", type=float, required=True)
    rp.add_argument("--engine-names", required=True)
    rp.add_argument("--engine-gpus", required=True)
    rp.add_argument("--warmup", type=float, required=True)
    rp.add_argument("--sample-ms", type=float, default=20)
    rp.add_argument("--sanitized", action="store_true")
    a = ap.parse_args()
    if a.mode == "load":
        run_load(a)
        return 0
    return run_report(a)


if __name__ == "__main__":
    sys.exit(main())
