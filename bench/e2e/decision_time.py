#!/usr/bin/env python3
"""The live routing decision time against the micro-benchmark's (issue: the live figure must match
the bench, or the difference be explained).

One `switchyard engine --replicas` process hosts DECISION_REPLICAS emulated replicas (A10), one
gateway (`workers: 1`, load-balance) routes to them. For each concurrency in
DECISION_CONCURRENCY (default 1 and 32) clients send DECISION_REQUESTS short chat requests
(8 output tokens) in closed loop; the mean decision time is the delta of
switchyard_routing_decision_seconds_sum ÷ _count over the run, next to the requests/s reached.
Then the same decisions in micro_bench: the hot loop, timed per decision with two clock reads,
and after evicting L1/L2 (BM_RouteLoadBalance*, see bench/micro/routing_bench.cc).
Loopback only; every process is stopped on exit.
"""
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time

import bench_procs
from bench_procs import metric, stop

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("SWITCHYARD", os.path.join(ROOT, "build/release/switchyard"))
MICRO = os.environ.get("MICRO_BENCH", os.path.join(ROOT, "build/release/micro_bench"))
REPLICAS = int(os.environ.get("DECISION_REPLICAS", "2"))
REQUESTS = int(os.environ.get("DECISION_REQUESTS", "600"))
CONCURRENCY = [int(c) for c in os.environ.get("DECISION_CONCURRENCY", "1,32").split(",")]
BODY = json.dumps({"model": "llama2-7b", "max_tokens": 8,
                   "messages": [{"role": "user", "content": "route me"}]}).encode()


async def client(port, count):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = ("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(BODY)).encode()
    for _ in range(count):
        writer.write(head + BODY)
        await writer.drain()
        status = await reader.readline()
        length = 0
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b""):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        await reader.readexactly(length)
        if b" 200 " not in status:
            raise RuntimeError(status.decode())
    writer.close()


async def clients(port, c):
    await asyncio.wait_for(asyncio.gather(*[client(port, REQUESTS // c) for _ in range(c)]), 300)


def scrape(admin_port):
    out = subprocess.run(["curl", "-s", "http://127.0.0.1:%d/metrics" % admin_port],
                         capture_output=True, text=True, timeout=10).stdout
    return (metric(out, "switchyard_routing_decision_seconds_sum"),
            metric(out, "switchyard_routing_decision_seconds_count"))


def live():
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        for i in range(REPLICAS):
            f.write("- {gpu: A10, model: llama2-7b, seed: %d}\n" % (i + 1))
        replicas_file = f.name
    engine, ports = bench_procs.start(BIN, ["engine", "--replicas", replicas_file])
    os.unlink(replicas_file)
    lines = "".join("      - address: 127.0.0.1:%d\n        labels: { gpu: A10 }\n" % p
                    for p in ports)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write("listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\nmodels:\n"
                "  - name: llama2-7b\n    routing_strategy: load-balance\n    replicas:\n"
                + lines)
        config = f.name
    gateway, gports = bench_procs.start(BIN, ["gateway", "--config", config])
    os.unlink(config)
    rows = []
    try:
        asyncio.run(client(gports[0], 20))  # warm-up
        for c in CONCURRENCY:
            s0, n0 = scrape(gports[1])
            started = time.monotonic()
            asyncio.run(clients(gports[0], c))
            elapsed = time.monotonic() - started
            s1, n1 = scrape(gports[1])
            rows.append((c, (n1 - n0) / elapsed, (s1 - s0) / max(1, n1 - n0)))
    finally:
        stop(gateway)
        stop(engine)
    return rows


def micro():
    args = [MICRO, "--benchmark_filter=BM_RouteLoadBalance(Clocked|ClockedCold)?/%d(/|$)" % REPLICAS,
            "--benchmark_format=json"]
    out = json.loads(subprocess.run(args, capture_output=True, text=True, timeout=600).stdout)
    return {b["name"].split("/")[0]: b["real_time"] for b in out["benchmarks"]}


def main():
    print("live: %d emulated replicas, one gateway worker, load-balance" % REPLICAS)
    print("%12s %12s %18s" % ("clients", "requests/s", "decision (mean)"))
    for c, rps, seconds in live():
        print("%12d %12.0f %15.0f ns" % (c, rps, seconds * 1e9))
    print("micro_bench, the same strategy at %d replicas:" % REPLICAS)
    names = {"BM_RouteLoadBalance": "hot loop",
             "BM_RouteLoadBalanceClocked": "two clock reads per decision",
             "BM_RouteLoadBalanceClockedCold": "two clock reads, L1/L2 evicted first"}
    for name, ns in sorted(micro().items()):
        print("%40s %8.0f ns" % (names.get(name, name), ns))
    return 0


if __name__ == "__main__":
    sys.exit(main())
