#!/usr/bin/env python3
"""Traffic-aware scale-down benchmark (`make bench-scaledown`, driven by bench/e2e/scaledown.sh).

A fake Kubernetes API server (tests/support/fake_kube: real HTTPS, list/watch), three gateways
discovering the fleet from it and sharing state in Redis, four emulated engines (one Pod each,
one Deployment), steady open-loop load of streamed requests. After a warm-up the Deployment
shrinks from 4 to 3 and this script plays the ReplicaSet controller (the fake server picks the
victim: lowest pod-deletion-cost first, then the most recently Ready) and the kubelet (preStop
hook, then SIGTERM; the emulated engine, like vLLM, stops at once and cuts what it serves).

Modes (each run starts from nothing: new API server, Redis, engines, gateways):
  kubernetes-picks   scale_down off (no deletion-cost annotation), no preStop hook: the victim
                     is Kubernetes' own pick and it is stopped while its streams run.
  switchyard         the gateways keep the cheapest replica annotated; the engine's preStop hook
                     runs `switchyard drain-wait` before SIGTERM.
  switchyard-predrain  as switchyard, plus an optimizer recommending 3 replicas PREDRAIN seconds
                     before the shrink: the gateways drain the victim ahead of it.

Measured per run: requests failed (non-200, or no answer) and cut mid-stream (200 but no
`data: [DONE]`), the victim's in-flight count (its engine's running + waiting) when it was
deleted and when it was stopped, and the time from the scale-down decision (for predrain: the
optimizer's recommendation) to the Pod's removal. Writes <out>/scaledown.csv (one row per run),
<out>/<mode>-<run>-requests.csv and <out>/<mode>-<run>-victim.csv (the victim's in-flight over
time). Standard library only; every process it starts is stopped on exit.
"""
import argparse
import csv
import http.client
import http.server
import json
import os
import random
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

WORDS = ("switchyard routes chat requests across a fleet of replicas that run on different "
         "kinds of accelerators while keeping queues short and latency low").split()
MODEL = "llama2-7b"
NAMESPACE = "default"
DEPLOYMENT = "llama-a10"
RS = "llama-a10-h1"


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--switchyard", required=True)
    p.add_argument("--fake-apiserver", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--modes", default="kubernetes-picks,switchyard,switchyard-predrain")
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--gpu", default="A10")
    p.add_argument("--rate", type=float, default=3.0, help="requests/s over all gateways")
    p.add_argument("--warmup", type=float, default=12, help="seconds of load before the shrink")
    p.add_argument("--after", type=float, default=20, help="seconds of load after the shrink")
    p.add_argument("--grace", type=int, default=60, help="terminationGracePeriodSeconds")
    p.add_argument("--predrain", type=float, default=8,
                   help="seconds between the optimizer's recommendation and the shrink")
    p.add_argument("--max-tokens", default="128-512")
    p.add_argument("--prompt-words", default="20-120")
    p.add_argument("--seed", type=int, default=11)
    return p.parse_args()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def span(text):
    lo, _, hi = text.partition("-")
    return int(lo), int(hi or lo)


class Processes:
    """Every process of one run; stop() ends them all (TERM, then KILL after 5 s)."""

    def __init__(self, work):
        self.work = work
        self.procs = []

    def start(self, name, argv, wait_listening=True):
        out = open(os.path.join(self.work, name + ".out"), "w+")
        err = open(os.path.join(self.work, name + ".err"), "w")
        proc = subprocess.Popen(argv, stdout=out, stderr=err)
        self.procs.append(proc)
        if not wait_listening:
            return proc, []
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            out.seek(0)
            for line in out.read().splitlines():
                if line.startswith("listening"):
                    ports = [int(tok.rsplit(":", 1)[1]) for tok in line.split()[1:]]
                    return proc, ports
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"{name} did not start: see {err.name}")

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []


class FakeKube:
    """The fake API server's /fake/... control endpoints over HTTPS (its CA, its token)."""

    def __init__(self, port, work):
        self.port = port
        self.ctx = ssl.create_default_context(cafile=os.path.join(work, "ca.crt"))
        with open(os.path.join(work, "token")) as f:
            self.token = f.read().strip()

    def call(self, method, path, body=None):
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=10)
        conn.request(method, path, json.dumps(body) if body is not None else None,
                     {"Authorization": "Bearer " + self.token,
                      "Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read().decode()
        conn.close()
        if resp.status != 200:
            raise RuntimeError(f"fake apiserver {method} {path}: {resp.status} {data}")
        return json.loads(data) if data else {}


class Optimizer(http.server.ThreadingHTTPServer):
    """Stands in for `switchyard optimize`: GET /metrics/<ns>/<deployment> answers
    vllm:deployment_replicas in hundredths; `replicas` is set by the run."""

    def __init__(self):
        self.replicas = None

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(h):  # noqa: N805
                if self.replicas is None or not h.path.startswith("/metrics/"):
                    h.send_response(404)
                    h.end_headers()
                    return
                body = (f'vllm:deployment_replicas{{model_name="{MODEL}"}} '
                        f'{self.replicas * 100}\n').encode()
                h.send_response(200)
                h.send_header("Content-Type", "text/plain")
                h.send_header("Content-Length", str(len(body)))
                h.end_headers()
                h.wfile.write(body)

            def log_message(h, *args):  # noqa: N805
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


def get(addr, path, timeout=2):
    host, port = addr.rsplit(":", 1)
    try:
        conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
        conn.request("GET", path)
        resp = conn.getresponse()
        data = resp.read().decode()
        conn.close()
        return data if resp.status == 200 else None
    except (OSError, http.client.HTTPException):
        return None


def engine_inflight(port):
    text = get(f"127.0.0.1:{port}", "/metrics", timeout=1)
    if text is None:
        return None
    total = 0.0
    for line in text.splitlines():
        for name in ("vllm:num_requests_running", "vllm:num_requests_waiting"):
            if line.startswith(name) and line[len(name)] in "{ ":
                total += float(line.rsplit(" ", 1)[1])
    return total


class Run:
    def __init__(self, args, mode, index):
        self.args = args
        self.mode = mode
        self.index = index
        self.work = tempfile.mkdtemp(prefix=f"switchyard-scaledown-{mode}-")
        self.procs = Processes(self.work)
        self.records = []  # (sent, done, gateway, status, target, outcome)
        self.lock = threading.Lock()
        self.t0 = None
        self.victim_samples = []  # (t, in flight)
        self.stop_sampling = threading.Event()

    def now(self):
        return time.monotonic() - self.t0

    # -- setting up ------------------------------------------------------------------------------
    def setup(self):
        a = self.args
        _, (api_port,) = self.procs.start(
            "apiserver", [a.fake_apiserver, "--out", self.work, "--token", "bench-token"])
        self.kube = FakeKube(api_port, self.work)
        redis_port = free_port()
        self.procs.start("redis", ["redis-server", "--bind", "127.0.0.1", "--port",
                                   str(redis_port), "--save", "", "--appendonly", "no",
                                   "--dir", self.work], wait_listening=False)
        self.engines = {}  # pod name -> (process, port)
        for i in range(4):
            proc, (port,) = self.procs.start(
                f"engine{i}", [a.switchyard, "engine", "--gpu", a.gpu, "--model", MODEL,
                               "--listen", "127.0.0.1:0", "--seed", str(a.seed + i)])
            self.engines[f"{RS}-pod{i}"] = (proc, port)
        self.kube.call("POST", "/fake/deployments",
                       {"namespace": NAMESPACE, "name": DEPLOYMENT, "replicas": 4,
                        "labels": {"model.aibrix.ai/name": MODEL}})
        for name, (_, port) in self.engines.items():
            self.kube.call("POST", "/fake/pods",
                           {"namespace": NAMESPACE, "name": name, "port": port,
                            "owner_replica_set": RS, "ready": True,
                            "labels": {"model.aibrix.ai/name": MODEL, "pod-template-hash": "h1",
                                       "gpu": a.gpu, "engine": "vllm"}})
        self.optimizer = Optimizer() if self.mode == "switchyard-predrain" else None
        scale_down = "{ enabled: false }"
        if self.mode != "kubernetes-picks":
            scale_down = "{ interval_ms: 500, lease_ms: 2000, hold_ms: 5000"
            if self.optimizer:
                scale_down += f", optimizer_url: 'http://127.0.0.1:{self.optimizer.server_port}'"
            scale_down += " }"
        config = os.path.join(self.work, "gateway.yaml")
        with open(config, "w") as f:
            f.write(f"""listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
workers: 1
routing: {{ default_strategy: least-request }}
shared_state: {{ backend: redis, address: 127.0.0.1:{redis_port}, sync_interval_ms: 100 }}
discovery:
  kubernetes:
    kubeconfig: {os.path.join(self.work, "kubeconfig")}
    namespaces: [{NAMESPACE}]
    scale_down: {scale_down}
models: []
""")
        self.gateways, self.admins = [], []
        for g in range(3):
            _, (port, admin) = self.procs.start(f"gateway{g}",
                                                [a.switchyard, "gateway", "--config", config])
            self.gateways.append(f"127.0.0.1:{port}")
            self.admins.append(f"127.0.0.1:{admin}")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if all(self.active_replicas(admin) == 4 for admin in self.admins):
                return
            time.sleep(0.1)
        raise RuntimeError("the gateways did not discover the four replicas")

    @staticmethod
    def active_replicas(admin):
        text = get(admin, "/debug/fleet")
        if not text:
            return 0
        fleet = json.loads(text)
        return sum(1 for m in fleet.get("models", []) for r in m.get("replicas", [])
                   if r.get("lifecycle") == "active")

    # -- load ------------------------------------------------------------------------------------
    def schedule(self):
        rng = random.Random(self.args.seed)  # the same arrivals for every mode and run
        pw, mt = span(self.args.prompt_words), span(self.args.max_tokens)
        t, out, i = 0.0, [], 0
        end = self.args.warmup + self.args.after
        while True:
            t += rng.expovariate(self.args.rate)
            if t >= end:
                return out
            prompt = " ".join(rng.choice(WORDS) for _ in range(rng.randint(*pw)))
            out.append((t, i % 3, prompt, rng.randint(*mt)))
            i += 1

    def request(self, sent_at, gw, prompt, max_tokens):
        host, port = self.gateways[gw].rsplit(":", 1)
        body = json.dumps({"model": MODEL, "stream": True, "max_tokens": max_tokens,
                           "messages": [{"role": "user", "content": prompt}]})
        status, target, outcome = 0, "", "failed"
        try:
            conn = http.client.HTTPConnection(host, int(port), timeout=120)
            conn.request("POST", "/v1/chat/completions", body,
                         {"Content-Type": "application/json"})
            resp = conn.getresponse()
            status, target = resp.status, resp.getheader("target-pod", "")
            tail = b""
            try:
                while True:
                    piece = resp.read1(65536)
                    if not piece:
                        break
                    tail = (tail + piece)[-64:]
                outcome = "ok" if status == 200 and b"[DONE]" in tail else (
                    "cut" if status == 200 else "failed")
            except (OSError, http.client.HTTPException):
                outcome = "cut" if status == 200 else "failed"
            conn.close()
        except (OSError, http.client.HTTPException):
            pass
        with self.lock:
            self.records.append((sent_at, self.now(), gw, status, target, outcome))

    def load(self):
        threads = []
        for at, gw, prompt, max_tokens in self.schedule():
            delay = at - self.now()
            if delay > 0:
                time.sleep(delay)
            th = threading.Thread(target=self.request, args=(self.now(), gw, prompt, max_tokens),
                                  daemon=True)
            th.start()
            threads.append(th)
        for th in threads:
            th.join(150)

    def sample_victim(self, port):
        while not self.stop_sampling.is_set():
            value = engine_inflight(port)
            self.victim_samples.append((self.now(), value))
            self.stop_sampling.wait(0.1)

    # -- the shrink ------------------------------------------------------------------------------
    def shrink(self):
        a = self.args
        result = {}
        decision_at = a.warmup
        if self.optimizer:
            time.sleep(max(0.0, a.warmup - a.predrain - self.now()))
            self.optimizer.replicas = 3  # the optimizer's recommendation: one fewer
            decision_at = self.now()
        time.sleep(max(0.0, a.warmup - self.now()))
        honour = self.mode != "kubernetes-picks"
        victims = self.kube.call("POST", "/fake/scale",
                                 {"namespace": NAMESPACE, "name": DEPLOYMENT, "replicas": 3,
                                  "grace_seconds": a.grace,
                                  "honour_deletion_cost": honour})["victims"]
        deleted_at = self.now()
        victim = victims[0]
        proc, port = self.engines[victim]
        result["victim"] = victim
        result["victim_port"] = port
        result["inflight_at_deletion"] = engine_inflight(port)
        self.victim_samples.append((deleted_at, result["inflight_at_deletion"]))
        sampler = threading.Thread(target=self.sample_victim, args=(port,), daemon=True)
        sampler.start()
        # The kubelet: the preStop hook (if any), then SIGTERM; SIGKILL at the grace period.
        hook_seconds = 0.0
        if self.mode != "kubernetes-picks":
            started = time.monotonic()
            hook = subprocess.run(
                [a.switchyard, "drain-wait", "--gateway", "http://" + self.admins[0],
                 "--pod", victim, "--timeout", f"{a.grace}s", "--interval", "200ms"],
                capture_output=True, text=True, timeout=a.grace + 10)
            hook_seconds = time.monotonic() - started
            result["drain_wait_exit"] = hook.returncode
        result["inflight_at_stop"] = engine_inflight(port)
        self.stop_sampling.set()
        sampler.join(2)
        self.victim_samples.append((self.now(), result["inflight_at_stop"]))
        self.victim_samples.append((self.now(), 0))  # stopped: whatever it served is gone
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(max(1, a.grace - hook_seconds))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        self.kube.call("POST", f"/fake/pods/{NAMESPACE}/{victim}/remove", {})
        removed_at = self.now()
        result["decision_at"] = decision_at
        result["deleted_at"] = deleted_at
        result["removed_at"] = removed_at
        result["decision_to_removal_s"] = removed_at - decision_at
        result["drain_wait_s"] = hook_seconds
        return result

    def execute(self):
        try:
            self.setup()
            self.t0 = time.monotonic()
            loader = threading.Thread(target=self.load, daemon=True)
            loader.start()
            result = self.shrink()
            loader.join(self.args.after + 200)
            return self.summarise(result)
        finally:
            self.stop_sampling.set()
            if getattr(self, "optimizer", None):
                self.optimizer.shutdown()
            self.procs.stop()
            shutil.rmtree(self.work, ignore_errors=True)

    def summarise(self, result):
        out = self.args.out
        victim_addr = f"127.0.0.1:{result['victim_port']}"
        with open(os.path.join(out, f"{self.mode}-{self.index}-requests.csv"), "w") as f:
            w = csv.writer(f)
            w.writerow(["sent_s", "done_s", "gateway", "status", "target", "outcome"])
            w.writerows(sorted(self.records))
        with open(os.path.join(out, f"{self.mode}-{self.index}-victim.csv"), "w") as f:
            w = csv.writer(f)
            w.writerow(["t_since_deletion_s", "victim_in_flight"])
            for t, v in self.victim_samples:
                w.writerow([f"{t - result['deleted_at']:.2f}", "" if v is None else v])
        outcomes = [r[5] for r in self.records]
        on_victim = [r for r in self.records if r[4] == victim_addr]
        summary = {
            "mode": self.mode,
            "run": self.index,
            "requests": len(self.records),
            "failed": outcomes.count("failed"),
            "cut": outcomes.count("cut"),
            "victim": result["victim"],
            "victim_requests": len(on_victim),
            "inflight_at_deletion": result["inflight_at_deletion"],
            "inflight_at_stop": result["inflight_at_stop"],
            "decision_to_removal_s": round(result["decision_to_removal_s"], 2),
            "drain_wait_s": round(result["drain_wait_s"], 2),
            "drain_wait_exit": result.get("drain_wait_exit", ""),
        }
        print(json.dumps(summary), flush=True)
        return summary


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    modes = args.modes.split(",")
    rows = []
    for index in range(args.runs):  # interleaved: every mode once per round
        for mode in modes:
            rows.append(Run(args, mode, index).execute())
    fields = list(rows[0].keys())
    with open(os.path.join(args.out, "scaledown.csv"), "w") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    print()
    header = (f"{'mode':22} {'requests':>8} {'failed':>6} {'cut':>5} {'in flight at deletion':>22} "
              f"{'at stop':>8} {'decision→removal s':>19}")
    print(header)
    for mode in modes:
        mine = [r for r in rows if r["mode"] == mode]
        med = lambda key: statistics.median(float(r[key] or 0) for r in mine)  # noqa: E731
        print(f"{mode:22} {sum(r['requests'] for r in mine):>8} "
              f"{sum(r['failed'] for r in mine):>6} {sum(r['cut'] for r in mine):>5} "
              f"{med('inflight_at_deletion'):>22.1f} {med('inflight_at_stop'):>8.1f} "
              f"{med('decision_to_removal_s'):>19.2f}")
    print(f"(sums of {args.runs} run(s) per mode for requests/failed/cut; medians otherwise)")


if __name__ == "__main__":
    main()
