#!/usr/bin/env python3
"""A surge against deadlines (make bench-slo, part 2).

One emulated fleet (SURGE_GPUS, one engine process) behind one gateway whose model has an
in-flight limit per replica. Its capacity is measured first (closed loop at the limit). Then, for
each admission mode (off: 429 when saturated; fifo: a plain queue; deadline: deadline-aware
admission), a fresh engine and gateway get the same seeded open-loop Poisson arrivals: 70 % of
capacity, then 2x capacity for SURGE_SURGE seconds, then 70 % again. Every client gives up after
SURGE_CLIENT_TIMEOUT seconds (and says so with x-request-timeout); the gateway aborts the engine
work of a client that left.

Per mode: goodput (completed within the client's timeout / offered), refusals by code, p50/p99
latency of the completed requests, and the GPU work spent on requests whose client gave up before
the answer (the emulator's switchyard_emulator_aborted_* counters: the seconds those requests
held a batch slot, and the tokens computed for them). Goal: deadline has the best goodput and
wastes <= 5 % of what fifo wastes. Loopback only; every process is stopped on exit.
"""
import asyncio
import json
import os
import random
import re
import sys
import tempfile
import time

import bench_procs
from bench_procs import metric, stop

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("SWITCHYARD", os.path.join(ROOT, "build/release/switchyard"))
OUT = os.environ.get("SURGE_OUT", os.path.join(ROOT, "build/bench-surge"))
GPUS = os.environ.get("SURGE_GPUS", "L20,L20,A10,A10").split(",")
LIMIT = int(os.environ.get("SURGE_LIMIT", "6"))
BEFORE = float(os.environ.get("SURGE_BEFORE", "30"))
SURGE = float(os.environ.get("SURGE_SURGE", "30"))
AFTER = float(os.environ.get("SURGE_AFTER", "30"))
BASE_LOAD = float(os.environ.get("SURGE_BASE_LOAD", "0.7"))
SURGE_LOAD = float(os.environ.get("SURGE_LOAD", "2.0"))
CLIENT_TIMEOUT = float(os.environ.get("SURGE_CLIENT_TIMEOUT", "30"))
MODES = os.environ.get("SURGE_MODES", "off,fifo,deadline").split(",")
SEED = int(os.environ.get("SURGE_SEED", "7"))
CAPACITY_SECONDS = float(os.environ.get("SURGE_CAPACITY_SECONDS", "20"))
PROMPT_WORDS = (20, 200)
MAX_TOKENS = (64, 384)
MODEL = "llama2-7b"


def start(args):
    return bench_procs.start(BIN, args)


async def http(port, method, path, body=None, headers=None, timeout=5.0):
    """One HTTP/1.1 exchange on a fresh connection: (status, body). Raises on timeout."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        data = body.encode() if body else b""
        head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" % (method, path)
        for k, v in (headers or {}).items():
            head += "%s: %s\r\n" % (k, v)
        if data:
            head += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(data)
        writer.write(head.encode() + b"\r\n" + data)
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
    status = int(raw.split(b" ", 2)[1]) if raw.startswith(b"HTTP/") else 0
    return status, raw.split(b"\r\n\r\n", 1)[-1].decode(errors="replace")


def body(rng):
    words = rng.randint(*PROMPT_WORDS)
    return json.dumps({"model": MODEL, "max_tokens": rng.randint(*MAX_TOKENS),
                       "messages": [{"role": "user", "content": " ".join(
                           "w%d" % rng.randint(0, 9999) for _ in range(words))}]})


def start_fleet(mode):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        for i, gpu in enumerate(GPUS):
            f.write("- {gpu: %s, model: %s, seed: %d}\n" % (gpu, MODEL, i + 1))
        replicas_file = f.name
    engine, ports = start(["engine", "--replicas", replicas_file, "--no-prefix-caching"])
    os.unlink(replicas_file)
    lines = "".join("      - address: 127.0.0.1:%d\n        labels: { gpu: %s }\n" % (p, g)
                    for p, g in zip(ports, GPUS))
    config = ("listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\n"
              "models:\n  - name: %s\n    routing_strategy: least-request\n"
              "    limits: { max_inflight_per_replica: %d }\n"
              "    admission: { queue: %s, max_queued: 4096, max_queued_per_client: 4096,"
              " max_wait_ms: %d }\n    replicas:\n%s"
              % (MODEL, LIMIT, mode, int(CLIENT_TIMEOUT * 1000) + 5000, lines))
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(config)
        config_file = f.name
    gateway, gports = start(["gateway", "--config", config_file])
    os.unlink(config_file)
    return engine, ports, gateway, gports


async def engine_counters(ports):
    totals = {"slot_s": 0.0, "tokens": 0.0, "aborted": 0.0, "busy_s": 0.0}
    for p in ports:
        _, text = await http(p, "GET", "/metrics")
        totals["slot_s"] += metric(text, "switchyard_emulator_aborted_running_seconds_total")
        totals["tokens"] += metric(text, "switchyard_emulator_aborted_computed_tokens_total")
        totals["aborted"] += metric(text, "switchyard_emulator_aborted_requests_total")
        totals["busy_s"] += metric(text, "switchyard_engine_busy_seconds_total")
    return totals


async def measure_capacity():
    """Closed loop at the limit on every replica: completed requests per second."""
    engine, ports, gateway, gports = start_fleet("fifo")
    rng = random.Random(SEED + 1000)
    done = 0
    end = time.time() + 3 + CAPACITY_SECONDS

    async def client():
        nonlocal done
        while time.time() < end:
            status, _ = await http(gports[0], "POST", "/v1/chat/completions", body(rng),
                                   timeout=120)
            if status == 200 and time.time() > end - CAPACITY_SECONDS:
                done += 1

    try:
        await asyncio.gather(*(client() for _ in range(LIMIT * len(GPUS))))
    finally:
        stop(gateway)
        stop(engine)
    return done / CAPACITY_SECONDS


def arrivals(capacity):
    """Poisson send times: BASE_LOAD, then SURGE_LOAD, then BASE_LOAD times capacity."""
    rng = random.Random(SEED)
    phases = [(BEFORE, BASE_LOAD), (SURGE, SURGE_LOAD), (AFTER, BASE_LOAD)]
    times, t0 = [], 0.0
    for length, load in phases:
        t = t0
        while True:
            t += rng.expovariate(load * capacity)
            if t >= t0 + length:
                break
            times.append(t)
        t0 += length
    return times


async def run_mode(mode, send_at):
    engine, ports, gateway, gports = start_fleet(mode)
    rng = random.Random(SEED + 1)
    bodies = [body(rng) for _ in send_at]
    records = []
    try:
        before = await engine_counters(ports)
        start_t = time.time()

        async def one(at, payload):
            await asyncio.sleep(max(0.0, start_t + at - time.time()))
            sent = time.time()
            rec = {"sent": sent - start_t, "status": 0, "code": "", "latency": None}
            try:
                status, text = await http(gports[0], "POST", "/v1/chat/completions", payload,
                                          {"x-request-timeout": "%gs" % CLIENT_TIMEOUT},
                                          timeout=CLIENT_TIMEOUT)
                rec["status"] = status
                rec["latency"] = time.time() - sent
                if status != 200:
                    m = re.search(r'"code":"([a-z_]+)"', text)
                    rec["code"] = m.group(1) if m else str(status)
            except asyncio.TimeoutError:
                rec["code"] = "client_gave_up"
            except OSError as e:
                rec["code"] = "error: %s" % e
            records.append(rec)

        await asyncio.gather(*(one(at, b) for at, b in zip(send_at, bodies)))
        await asyncio.sleep(1.0)  # aborts reach the engines
        after = await engine_counters(ports)
    finally:
        stop(gateway)
        stop(engine)
    ok = [r for r in records if r["status"] == 200 and r["latency"] <= CLIENT_TIMEOUT]
    lat = sorted(r["latency"] for r in ok)
    codes = {}
    for r in records:
        if r["status"] != 200:
            codes[r["code"]] = codes.get(r["code"], 0) + 1

    def pct(p):
        return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")

    return {"mode": mode, "offered": len(records), "good": len(ok),
            "goodput_pct": 100.0 * len(ok) / max(1, len(records)),
            "p50_s": pct(0.5), "p99_s": pct(0.99), "codes": codes,
            "wasted_slot_s": after["slot_s"] - before["slot_s"],
            "wasted_tokens": after["tokens"] - before["tokens"],
            "aborted": after["aborted"] - before["aborted"],
            "busy_s": after["busy_s"] - before["busy_s"], "records": records}


def main():
    os.makedirs(OUT, exist_ok=True)
    log = open(os.path.join(OUT, "surge.txt"), "w")

    def say(text=""):
        print(text)
        log.write(text + "\n")
        log.flush()

    say("command: python3 bench/e2e/surge.py (SURGE_GPUS=%s SURGE_LIMIT=%d SURGE_SEED=%d)"
        % (",".join(GPUS), LIMIT, SEED))
    say("machine: nproc=%d, load average %s at start, %s" % (
        os.cpu_count(), " ".join(open("/proc/loadavg").read().split()[:3]),
        time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())))
    capacity = asyncio.run(measure_capacity())
    if capacity <= 0:
        say("capacity measurement failed")
        return 1
    send_at = arrivals(capacity)
    say("fleet %s, limit %d per replica: capacity %.2f requests/s (closed loop, %g s)"
        % ("+".join(GPUS), LIMIT, capacity, CAPACITY_SECONDS))
    say("load: %.0f%% for %g s, %.0f%% for %g s, %.0f%% for %g s: %d requests; clients give up "
        "after %g s" % (100 * BASE_LOAD, BEFORE, 100 * SURGE_LOAD, SURGE, 100 * BASE_LOAD, AFTER,
                        len(send_at), CLIENT_TIMEOUT))
    results = []
    for mode in MODES:
        r = asyncio.run(run_mode(mode, send_at))
        results.append(r)
        say("  %-8s done" % mode)
    say("")
    say("%-9s %8s %9s %8s %8s %12s %12s %9s  %s" % (
        "mode", "offered", "goodput%", "p50 s", "p99 s", "wasted slot-s", "wasted tok",
        "aborted", "not served (by reason)"))
    for r in results:
        say("%-9s %8d %8.1f%% %8.2f %8.2f %13.1f %12.0f %9.0f  %s" % (
            r["mode"], r["offered"], r["goodput_pct"], r["p50_s"], r["p99_s"],
            r["wasted_slot_s"], r["wasted_tokens"], r["aborted"],
            ", ".join("%s %d" % kv for kv in sorted(r["codes"].items()))))
    fifo = next((r for r in results if r["mode"] == "fifo"), None)
    dead = next((r for r in results if r["mode"] == "deadline"), None)
    if fifo and dead:
        ratio = dead["wasted_tokens"] / fifo["wasted_tokens"] if fifo["wasted_tokens"] else 0.0
        best = max(results, key=lambda r: r["goodput_pct"])["mode"]
        say("deadline wastes %.1f%% of fifo's aborted tokens (goal <= 5%%); best goodput: %s"
            % (100 * ratio, best))
    say("goodput = answered 200 within the client's %g s / offered; wasted = engine work on "
        "requests whose client gave up (slot-seconds: time they held a batch slot; tokens: "
        "prefill + decode computed)" % CLIENT_TIMEOUT)
    say("load average %s at the end" % " ".join(open("/proc/loadavg").read().split()[:3]))
    with open(os.path.join(OUT, "surge.csv"), "w") as csv:
        csv.write("mode,sent_s,status,code,latency_s\n")
        for r in results:
            for rec in sorted(r["records"], key=lambda x: x["sent"]):
                csv.write("%s,%.3f,%d,%s,%s\n" % (
                    r["mode"], rec["sent"], rec["status"], rec["code"],
                    "" if rec["latency"] is None else "%.3f" % rec["latency"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
