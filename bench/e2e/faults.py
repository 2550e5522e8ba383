#!/usr/bin/env python3
"""Fault scenarios under steady load against a running Switchyard gateway and emulated engines.

For each scenario: Poisson load of non-streamed chat requests; a fault is applied to replica 0 at
t=2 s and removed at t=6 s; the script reports client-visible failures, time until the gateway
excluded the replica, time until it was healthy again after the fault ended, and the retry
overhead (upstream attempts per client request - 1). Loopback only; bounded in time.
Usage: faults.py GATEWAY_PORT ADMIN_PORT ENGINE_PORTS(comma) RESTART_CMD_FILE ENGINE0_PID_FILE
"""
import http.client
import json
import os
import signal
import random
import subprocess
import sys
import threading
import time

gw, admin = int(sys.argv[1]), int(sys.argv[2])
engines = [int(p) for p in sys.argv[3].split(",")]
restart_cmd = open(sys.argv[4]).read().strip() if len(sys.argv) > 4 else ""
RATE = float(os.environ.get("FAULTS_RATE", "20"))
DURATION = float(os.environ.get("FAULTS_DURATION", "12"))
BODY = json.dumps({"model": "llama2-7b", "max_tokens": 16,
                   "messages": [{"role": "user", "content": "Say this is a test!"}]})


def get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


def post(port, path, body, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("POST", path, body, {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


def fleet():
    return json.loads(get(admin, "/debug/fleet")[1])


def replica_health(port):
    for m in fleet()["models"]:
        for r in m["replicas"]:
            if r["name"].endswith(":%d" % port):
                return r["health"]
    return "?"


def attempts_total():
    return sum(r["requests_total"] for m in fleet()["models"] for r in m["replicas"])


def set_faults(port, faults):
    try:
        post(port, "/admin/faults", json.dumps(faults), timeout=5)
    except OSError:
        pass


def run(name, apply, clear):
    statuses = []
    lock = threading.Lock()

    def one():
        try:
            s = post(gw, "/v1/chat/completions", BODY)
        except OSError:
            s = 0
        with lock:
            statuses.append(s)

    rng = random.Random(7)
    threads = []
    before = attempts_total()
    start = time.monotonic()
    applied = cleared = excluded_at = healthy_at = None
    next_arrival = 0.0
    while time.monotonic() - start < DURATION:
        now = time.monotonic() - start
        if applied is None and now >= 2:
            apply()
            applied = now
        if cleared is None and now >= 6:
            clear()
            cleared = now
        if applied is not None and excluded_at is None and replica_health(engines[0]) != "healthy":
            excluded_at = now
        if cleared is not None and healthy_at is None and excluded_at is not None and \
                replica_health(engines[0]) == "healthy":
            healthy_at = now
        while next_arrival <= now:
            t = threading.Thread(target=one)
            t.start()
            threads.append(t)
            next_arrival += rng.expovariate(RATE)
        time.sleep(0.02)
    for t in threads:
        t.join(60)
    attempts = attempts_total() - before
    n = len(statuses)
    failed = sum(1 for s in statuses if s != 200)
    fmt = lambda v: "-" if v is None else "%.2f" % v
    print("%-14s %6d %6d %6.2f%% %12s %12s %9.2f" % (
        name, n, failed, 100.0 * failed / max(1, n),
        fmt(None if excluded_at is None else excluded_at - applied),
        fmt(None if healthy_at is None else healthy_at - cleared),
        attempts / max(1, n) - 1))
    time.sleep(3)  # let health settle before the next scenario


PID_FILE = sys.argv[5] if len(sys.argv) > 5 else ""


def crash():
    os.kill(int(open(PID_FILE).read().strip()), signal.SIGKILL)


def restart():
    p = subprocess.Popen(restart_cmd.split(), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    open(PID_FILE, "w").write(str(p.pid))


def flap_on():
    def flapper():
        for i in range(8):
            set_faults(engines[0], {"error_rate": 1, "error_status": 500} if i % 2 == 0 else {})
            time.sleep(0.5)
    threading.Thread(target=flapper, daemon=True).start()


print("%-14s %6s %6s %7s %12s %12s %9s" % ("scenario", "reqs", "failed", "fail%",
                                              "exclude_s", "recover_s", "retry_ovh"))
run("500s", lambda: set_faults(engines[0], {"error_rate": 1, "error_status": 500}),
    lambda: set_faults(engines[0], {}))
run("hang", lambda: set_faults(engines[0], {"hang": 1}), lambda: set_faults(engines[0], {}))
run("reset", lambda: set_faults(engines[0], {"reset": 1}), lambda: set_faults(engines[0], {}))
run("flapping", flap_on, lambda: set_faults(engines[0], {}))
run("slow-gpu", lambda: set_faults(engines[0], {"slowdown": 4}),
    lambda: set_faults(engines[0], {}))
run("stale-metrics", lambda: set_faults(engines[0], {"metrics_stale": True}),
    lambda: set_faults(engines[0], {}))
if restart_cmd and PID_FILE:
    run("crash", crash, restart)
