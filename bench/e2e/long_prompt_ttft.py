#!/usr/bin/env python3
"""A long prompt's time to first token on each emulated GPU, next to the roofline (make bench-slo,
part 3).

One `switchyard engine --replicas` process hosts one replica per GPU type (LONG_GPUS, default
A10,L20,A100); each gets LONG_REPEATS streamed chat requests, one at a time, whose prompt is
LONG_PROMPT_TOKENS tokens (4 characters each, distinct text so no prefix is cached) and which ask
for 2 tokens. Printed per GPU: the median measured TTFT over HTTP, and two predictions from the
same data/profiles.yaml the emulator reads:
  - model: what the emulator's roofline should give (docs/engine-emulator.md): the request
    overhead, then the prompt in chunks of max_num_batched_tokens, each step
    max(2·params·chunk / (TFLOPs × compute efficiency), weights / (bandwidth × bandwidth
    efficiency)) + the step overhead + one request's per-step cost;
  - datasheet: the bare compute bound 2·params·tokens / peak TFLOPs (what no engine reaches);
and the share of attention's quadratic FLOPs (2·layers·hidden·tokens², causal), which the
roofline leaves out. Writes long_prompt_ttft.csv. Loopback only; the engine is stopped on exit.
"""
import json
import os
import socket
import statistics
import sys
import tempfile
import time

import yaml

import bench_procs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("SWITCHYARD", os.path.join(ROOT, "build/release/switchyard"))
OUT = os.environ.get("LONG_OUT", os.path.join(ROOT, "build/bench-slo"))
GPUS = os.environ.get("LONG_GPUS", "A10,L20,A100").split(",")
TOKENS = int(os.environ.get("LONG_PROMPT_TOKENS", "4096"))
REPEATS = int(os.environ.get("LONG_REPEATS", "5"))
MODEL = os.environ.get("LONG_MODEL", "llama2-7b")


def ttft(port, serial):
    """Seconds from sending one streamed request to its first content chunk."""
    text = "".join("w%07d " % (serial * 1000003 + i) for i in range(TOKENS // 2))[: TOKENS * 4]
    body = json.dumps({"model": MODEL, "max_tokens": 2, "stream": True,
                       "messages": [{"role": "user", "content": text}]}).encode()
    head = ("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        start = time.monotonic()
        s.sendall(head + body)
        seen = b""
        while b'"content":"' not in seen.split(b"\r\n\r\n", 1)[-1].replace(b'"content":""', b""):
            chunk = s.recv(65536)
            if not chunk:
                raise RuntimeError("the engine closed before the first token")
            seen += chunk
        return time.monotonic() - start


def predictions(profiles, gpu):
    engine = profiles["engine"]
    spec = next(g for g in profiles["gpus"] if g["name"] == gpu or gpu in g.get("aliases", []))
    model = next(m for m in profiles["models"]
                 if m["name"] == MODEL or MODEL in m.get("aliases", []))
    params, flops = float(model["params"]), float(spec["tflops"]) * 1e12
    weights = params * model["bytes_per_param"]
    budget = engine["max_num_batched_tokens"]
    step_memory = weights / (float(spec["bandwidth_gbps"]) * 1e9 * engine["bandwidth_efficiency"])
    seconds = engine["request_overhead_ms"] / 1e3
    left = TOKENS
    while left > 0:
        chunk = min(left, budget)
        compute = 2 * params * chunk / (flops * engine["compute_efficiency"])
        seconds += (max(compute, step_memory) + engine["step_overhead_ms"] / 1e3
                    + engine["seq_overhead_us"] / 1e6)
        left -= chunk
    linear = 2 * params * TOKENS
    attention = 2 * model["layers"] * model["hidden_size"] * TOKENS ** 2
    return seconds, linear / flops, attention / (linear + attention)


def main():
    with open(os.path.join(ROOT, "data/profiles.yaml")) as f:
        profiles = yaml.safe_load(f)
    os.makedirs(OUT, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        for i, gpu in enumerate(GPUS):
            f.write("- {gpu: %s, model: %s, seed: %d}\n" % (gpu, MODEL, i + 1))
        replicas_file = f.name
    engine, ports = bench_procs.start(
        BIN, ["engine", "--replicas", replicas_file, "--no-prefix-caching"])
    os.unlink(replicas_file)
    rows = []
    try:
        serial = 0
        for gpu, port in zip(GPUS, ports):
            measured = []
            for _ in range(REPEATS):
                serial += 1
                measured.append(ttft(port, serial))
            model_s, datasheet_s, attention_share = predictions(profiles, gpu)
            rows.append((gpu, statistics.median(measured), model_s, datasheet_s, attention_share))
    finally:
        bench_procs.stop(engine)
    print("%d-token prompt, %s, one request at a time, median of %d, TTFT in ms"
          % (TOKENS, MODEL, REPEATS))
    print("%-6s %9s %13s %10s %14s %16s" % ("gpu", "measured", "roofline", "ratio",
                                            "datasheet", "attention share"))
    for gpu, measured, model_s, datasheet_s, attention_share in rows:
        print("%-6s %9.0f %13.0f %9.2fx %14.0f %15.1f%%" % (
            gpu, measured * 1e3, model_s * 1e3, measured / model_s, datasheet_s * 1e3,
            attention_share * 100))
    print("roofline = the emulator's model from data/profiles.yaml (overheads, chunks of "
          "max_num_batched_tokens, efficiencies); datasheet = 2 x params x tokens / peak FLOPs; "
          "attention share = the causal attention FLOPs the roofline leaves out, of the total")
    with open(os.path.join(OUT, "long_prompt_ttft.csv"), "w") as f:
        f.write("gpu,measured_ms,roofline_ms,datasheet_ms,attention_share\n")
        for gpu, measured, model_s, datasheet_s, attention_share in rows:
            f.write("%s,%.1f,%.1f,%.1f,%.4f\n" % (gpu, measured * 1e3, model_s * 1e3,
                                                  datasheet_s * 1e3, attention_share))
    worst = max(abs(m / s - 1) for _, m, s, _, _ in rows)
    return 0 if worst <= 0.15 else 1


if __name__ == "__main__":
    sys.exit(main())
