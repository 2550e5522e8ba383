#!/usr/bin/env python3
"""Prefix-cache routing against load-only strategies (make bench-prefix).

Eight emulated replicas of llama2-7b (PREFIX_GPUS, two GPU types) with prefix caching on, in one
engine process, behind one gateway (PREFIX_WORKERS workers, default 1; PREFIX_GATEWAYS gateways,
default 1; llm-d's shape behind eight, below). Four workloads, each run once per strategy on a
fresh engine and gateways with the same seeded users:

  chat    multi-turn chats with a growing history: PREFIX_CHAT_USERS users, each in a
          conversation of 4-10 turns (a short system prompt, then every turn sends the whole
          history plus a new 60-180-word question and gets 32-128 tokens back); a user starts a
          new conversation when one ends. Closed loop with 0.5-2 s of thinking between turns.
  system  many users sharing a few long system prompts: 4 prompts of ~2,000 tokens, each
          request one of them (Zipf-like) plus a 20-80-word question, single turn.
  rag     retrieval-augmented prompts repeating a small set of documents: 16 documents of ~800
          tokens, each request two of them (the first Zipf-like) plus a question.

  llmd    llm-d's published shape scaled to this fleet: PREFIX_LLMD_GROUPS groups of
          PREFIX_LLMD_USERS users; each group shares a ~6,000-token context and every request is
          that context plus a new ~1,200-token question. The default group count makes the
          contexts need about three quarters of the fleet's KV cache (read from the engines'
          vllm:cache_config_info num_gpu_blocks). Reported besides: TTFT p90 and throughput
          (requests completed per second after the warm-up). Open loop as llm-d offered fixed
          rates: Poisson arrivals at PREFIX_LLMD_RATE requests/s (5; 0: a closed loop of users
          thinking 0.2-1 s). It runs as the goal is measured: PREFIX_LLMD_GATEWAYS gateways (8),
          PREFIX_LLMD_SECONDS (150) with PREFIX_LLMD_WARMUP (20) not counted, one user per
          group; PREFIX_GATEWAYS, PREFIX_SECONDS and PREFIX_WARMUP apply to it only when its
          own knob is unset.

Strategies (PREFIX_STRATEGIES): least-request, load-balance, session (load-balance with the
x-session-id header: the gateway pins each conversation / user to the replica of its first
request), prefix-cache (approximate: `routing.prefix_cache.mode: approximate`),
prefix-cache-precise (the engines publish KV events, `mode: precise`: docs/routing.md). Per
workload and strategy: TTFT p50/p99 (time to the first content token of a streamed answer), E2E
p99, the engines' prefix-cache hit rate (hits ÷ queried tokens, vllm:prefix_cache_*), and max ÷
mean in-flight across replicas (each engine's running + waiting, sampled every 0.25 s, averaged
over the samples with any load). Ratios against load-balance of the same run. Goal (chat):
prefix-cache TTFT p50 <= 0.5x load-balance's, E2E p99 <= load-balance's, max/mean in-flight <=
1.5. Goal (llmd): precise TTFT p90 <= 0.1x approximate's, throughput >= 1.2x.

PREFIX_EXPLAIN=1 records every request's routing decision (decisions-<workload>-<strategy>.jsonl
in PREFIX_OUT) and splits each prefix-cache run's TTFT by placement: to a replica holding the
longest match, away from one, or where no candidate held any block: the session's first request,
or a later one ("seen before": its prefix evicted everywhere, or with the approximate index one
this gateway never learned or forgot). The gateways' logs are kept too
(gateway-<strategy>-<i>.log, the last workload's run), with every health exclusion and why.

Loopback only; bounded (PREFIX_SECONDS per run); every process it starts is stopped on exit.
"""
import asyncio
import json
import os
import random
import sys
import tempfile
import time

import bench_procs
from bench_procs import metric, stop

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("SWITCHYARD", os.path.join(ROOT, "build/release/switchyard"))
OUT = os.environ.get("PREFIX_OUT", os.path.join(ROOT, "build/bench-prefix"))
GPUS = os.environ.get("PREFIX_GPUS", "A10,A10,A10,A10,L20,L20,L20,L20").split(",")
SECONDS = float(os.environ.get("PREFIX_SECONDS", "40"))
WARMUP = float(os.environ.get("PREFIX_WARMUP", "5"))
SEED = int(os.environ.get("PREFIX_SEED", "7"))
CHAT_USERS = int(os.environ.get("PREFIX_CHAT_USERS", "40"))
SYSTEM_USERS = int(os.environ.get("PREFIX_SYSTEM_USERS", "40"))
RAG_USERS = int(os.environ.get("PREFIX_RAG_USERS", "40"))
WORKLOADS = os.environ.get("PREFIX_WORKLOADS", "chat,system,rag,llmd").split(",")
STRATEGIES = os.environ.get("PREFIX_STRATEGIES",
                            "least-request,load-balance,session,prefix-cache,"
                            "prefix-cache-precise").split(",")
LLMD_GROUPS = int(os.environ.get("PREFIX_LLMD_GROUPS", "0"))  # 0: 3/4 of the fleet's KV cache
LLMD_USERS = int(os.environ.get("PREFIX_LLMD_USERS", "1"))
# llm-d's runs offer a fixed rate; > 0: Poisson arrivals at this many requests/s (each from a
# random user of a random group), 0: the closed loop of users thinking 0.2-1 s. At 5/s precise
# routing keeps up (it completes about 4.8/s) and approximate routing falls behind: a
# throughput ratio needs an offered rate above what the weaker strategy serves
# (docs/benchmarks.md, "The priced choice").
LLMD_RATE = float(os.environ.get("PREFIX_LLMD_RATE", "5"))
# Gateway workers: each keeps its own index and they pass each other what they route
# (docs/routing.md, "What the workers share"; PREFIX_CACHE_KEYS="share_between_workers: false"
# to compare).
WORKERS = int(os.environ.get("PREFIX_WORKERS", "1"))
# Gateways (separate processes, no shared state): each request goes to one of them at random, as
# behind a front load balancer. Each learns its own approximate index and its own session pins;
# what the engines publish (metrics, KV events) every gateway reads.
GATEWAYS = int(os.environ.get("PREFIX_GATEWAYS", "1"))


class RunShape:
    """How long a workload's runs last, the warm-up not counted, and how many gateways."""

    def __init__(self, seconds, warmup, gateways):
        self.seconds, self.warmup, self.gateways = seconds, warmup, gateways


def llmd_knob(name, shared, default):
    """llm-d's shape runs as the goal is measured: a PREFIX_LLMD_* knob, else the knob every
    workload shares when it is set, else llm-d's own default."""
    return float(os.environ.get("PREFIX_LLMD_" + name, os.environ.get("PREFIX_" + shared,
                                                                      default)))


# Eight gateways that share nothing: the approximate index learns an eighth of the traffic in
# each, as behind llm-d's several scheduler replicas; 150 s with 20 s of warm-up reach the
# steady state where contexts are evicted and rebuilt (docs/benchmarks.md).
SHAPES = {"llmd": RunShape(llmd_knob("SECONDS", "SECONDS", "150"),
                           llmd_knob("WARMUP", "WARMUP", "20"),
                           int(llmd_knob("GATEWAYS", "GATEWAYS", "8")))}


def shape_of(workload):
    return SHAPES.get(workload, RunShape(SECONDS, WARMUP, GATEWAYS))


# Extra keys for routing.prefix_cache, e.g. "hot_spot_factor: 3" (docs/routing.md).
CACHE_KEYS = os.environ.get("PREFIX_CACHE_KEYS", "")
# PREFIX_EXPLAIN=1: every request asks for its decision (x-switchyard-explain), each run's requests
# go to PREFIX_OUT/decisions-<workload>-<strategy>.jsonl, and the report splits TTFT by where the
# request went: to a replica with the longest match, away from one, or where none held any.
EXPLAIN = os.environ.get("PREFIX_EXPLAIN", "0") == "1"
MODEL = "llama2-7b"


def start(args, log=None):
    return bench_procs.start(BIN, args, log)


async def get_metrics(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()
    return raw.split(b"\r\n\r\n", 1)[-1].decode(errors="replace")


async def stream(port, payload, headers, timeout=120.0):
    """One streamed chat completion: (status, ttft seconds or None, e2e seconds, decision header
    or None)."""
    decision = None
    sent = time.time()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    ttft = None
    status = 0
    try:
        data = payload.encode()
        head = ("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(data))
        for k, v in headers.items():
            head += "%s: %s\r\n" % (k, v)
        if EXPLAIN:
            head += "x-switchyard-explain: 1\r\n"
        writer.write(head.encode() + b"\r\n" + data)
        await writer.drain()
        buf = b""
        end = sent + timeout
        while True:
            chunk = await asyncio.wait_for(reader.read(65536), max(0.1, end - time.time()))
            if not chunk:
                break
            buf += chunk
            if status == 0 and b"\r\n" in buf:
                first = buf.split(b"\r\n", 1)[0].split(b" ")
                status = int(first[1]) if len(first) > 1 and first[1].isdigit() else -1
            # The first chunk with generated text (the role chunk carries none).
            if ttft is None and b'"content":"' in buf:
                i = buf.find(b'"content":"')
                while i >= 0:
                    if buf[i + 11:i + 12] not in (b'"', b""):
                        ttft = time.time() - sent
                        break
                    i = buf.find(b'"content":"', i + 11)
            if EXPLAIN and decision is None and b"\r\n\r\n" in buf:
                decision = decision_header(buf)
            if ttft is not None and len(buf) > 1 << 16:
                buf = buf[-256:]
    finally:
        writer.close()
    return status, ttft, time.time() - sent, decision


def decision_header(buf):
    """The x-switchyard-decision value of a response head ("" when absent)."""
    for line in buf.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"x-switchyard-decision":
            return value.strip().decode(errors="replace")
    return ""


def placement(decision):
    """Where a prefix-cache decision sent the request, from its explain header: "held" (the
    chosen replica had the longest match of the candidates), "away" (another had a longer one;
    "away, holder kv_critical" when load-balance had passed every such holder over for its KV
    cache), "none" (no candidate held any block), or None for a decision without matches."""
    fields = dict(f.strip().split("=", 1) for f in (decision or "").split(";") if "=" in f)
    if "prefix_match" not in fields or "chosen" not in fields:
        return None
    matches = {}
    for item in fields["prefix_match"].split(","):
        replica, _, blocks = item.rpartition(":")
        matches[replica] = int(blocks.replace("(home)", "") or 0)
    best = max(matches.values(), default=0)
    if best == 0:
        return "none"
    if matches.get(fields["chosen"], 0) >= best:
        return "held"
    critical = {item.split("(")[0] for item in fields.get("passed_over", "").split(",")
                if item.endswith("(kv_critical)")}
    holders = [r for r, blocks in matches.items() if blocks == best]
    return "away, holder kv_critical" if all(r in critical for r in holders) else "away"


def words(rng, lo, hi):
    return " ".join("w%d" % rng.randint(0, 99999) for _ in range(rng.randint(lo, hi)))


def zipf_pick(rng, n):
    weights = [1.0 / (k + 1) for k in range(n)]
    return rng.choices(range(n), weights)[0]


class Chat:
    """A user in multi-turn chats: every turn resends the history."""

    def __init__(self, rng, uid):
        self.rng, self.uid, self.conv = rng, uid, 0
        self.new_conversation()

    def new_conversation(self):
        self.conv += 1
        self.turns_left = self.rng.randint(4, 10)
        self.messages = [{"role": "system", "content": "You are assistant %d. " % self.uid +
                          words(self.rng, 30, 60)}]

    def next(self):
        if self.turns_left == 0:
            self.new_conversation()
        self.turns_left -= 1
        self.messages.append({"role": "user", "content": words(self.rng, 60, 180)})
        max_tokens = self.rng.randint(32, 128)
        payload = {"model": MODEL, "stream": True, "max_tokens": max_tokens,
                   "messages": list(self.messages)}
        # The answer joins the history (the emulator's words are not read back: a stand-in of
        # the same length keeps the prompt growing as a real chat's would).
        self.messages.append({"role": "assistant", "content": words(self.rng, max_tokens * 2 // 3,
                                                                     max_tokens * 2 // 3)})
        return payload, "u%d-c%d" % (self.uid, self.conv), self.rng.uniform(0.5, 2.0)


class SystemPrompt:
    PROMPTS = None

    def __init__(self, rng, uid):
        self.rng, self.uid = rng, uid
        if SystemPrompt.PROMPTS is None:
            prng = random.Random(SEED + 500)
            SystemPrompt.PROMPTS = ["System prompt %d. " % k + words(prng, 1300, 1400)
                                    for k in range(4)]

    def next(self):
        prompt = SystemPrompt.PROMPTS[zipf_pick(self.rng, 4)]
        payload = {"model": MODEL, "stream": True, "max_tokens": self.rng.randint(32, 128),
                   "messages": [{"role": "system", "content": prompt},
                                {"role": "user", "content": words(self.rng, 20, 80)}]}
        return payload, "u%d" % self.uid, self.rng.uniform(0.2, 1.0)


class Rag:
    DOCS = None

    def __init__(self, rng, uid):
        self.rng, self.uid = rng, uid
        if Rag.DOCS is None:
            prng = random.Random(SEED + 600)
            Rag.DOCS = ["Document %d. " % k + words(prng, 520, 560) for k in range(16)]

    def next(self):
        a = zipf_pick(self.rng, 16)
        b = self.rng.randrange(16)
        content = ("Answer from these documents.\n" + Rag.DOCS[a] + "\n" + Rag.DOCS[b] +
                   "\nQuestion: " + words(self.rng, 15, 40))
        payload = {"model": MODEL, "stream": True, "max_tokens": self.rng.randint(32, 128),
                   "messages": [{"role": "user", "content": content}]}
        return payload, "u%d" % self.uid, self.rng.uniform(0.2, 1.0)


class Llmd:
    """llm-d's shape: a group's users share a 6,000-token context; 1,200-token questions."""
    CONTEXTS = None
    GROUPS = 1

    def __init__(self, rng, uid):
        self.rng, self.uid = rng, uid
        self.group = uid % Llmd.GROUPS
        if Llmd.CONTEXTS is None:
            prng = random.Random(SEED + 700)
            # "wNNNNN " is 7 bytes: 3,430 words are ~24,000 bytes = ~6,000 tokens at 4 bytes each.
            Llmd.CONTEXTS = ["Context %d. " % k + words(prng, 3430, 3430)
                             for k in range(Llmd.GROUPS)]

    def next(self):
        content = Llmd.CONTEXTS[self.group] + "\nQuestion: " + words(self.rng, 686, 686)
        payload = {"model": MODEL, "stream": True, "max_tokens": self.rng.randint(32, 128),
                   "messages": [{"role": "user", "content": content}]}
        return payload, "g%d-u%d" % (self.group, self.uid), self.rng.uniform(0.2, 1.0)


USERS = {"chat": (Chat, CHAT_USERS), "system": (SystemPrompt, SYSTEM_USERS),
         "rag": (Rag, RAG_USERS), "llmd": (Llmd, 0)}


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_engines(precise):
    """The engine process: (process, HTTP ports, KV-event (publish, replay) ports or None per
    replica). The KV-event ports are chosen here, free when chosen; one taken by another process
    before the engine binds it fails the start, so a failed start is tried again with new ones."""
    for attempt in range(3):
        events = [(free_port(), free_port()) if precise else None for _ in GPUS]
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            for i, gpu in enumerate(GPUS):
                extra = (", kv_events_endpoint: 'tcp://127.0.0.1:%d', kv_events_replay_endpoint: "
                         "'tcp://127.0.0.1:%d'" % events[i]) if precise else ""
                f.write("- {gpu: %s, model: %s, seed: %d%s}\n" % (gpu, MODEL, i + 1, extra))
            replicas_file = f.name
        try:
            engine, ports = bench_procs.start(BIN, ["engine", "--replicas", replicas_file],
                                              attempts=1)
            return engine, ports, events
        except RuntimeError as e:
            if attempt == 2:
                raise
            print("  (engine start failed, trying again: %s)" % e, flush=True)
        finally:
            os.unlink(replicas_file)


def start_fleet(strategy, gateway_count):
    precise = strategy == "prefix-cache-precise"
    engine, ports, events = start_engines(precise)
    lines = ""
    for p, g, e in zip(ports, GPUS, events):
        labels = "gpu: %s" % g
        if e:
            labels += (", kv_events: 'tcp://127.0.0.1:%d', kv_events_replay: 'tcp://127.0.0.1:%d'"
                       % e)
        lines += "      - address: 127.0.0.1:%d\n        labels: { %s }\n" % (p, labels)
    name = {"session": "load-balance", "prefix-cache-precise": "prefix-cache"}.get(strategy,
                                                                                  strategy)
    mode = "precise" if precise else "approximate"
    config = ("listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: %d\n"
              "routing:\n  prefix_cache: { mode: %s%s }\n"
              "models:\n  - name: %s\n    routing_strategy: %s\n    replicas:\n%s"
              % (WORKERS, mode, ", " + CACHE_KEYS if CACHE_KEYS else "", MODEL, name, lines))
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(config)
        config_file = f.name
    # With PREFIX_EXPLAIN the gateways' logs are kept: they say why a replica was excluded.
    gateways = [start(["gateway", "--config", config_file],
                      os.path.join(OUT, "gateway-%s-%d.log" % (strategy, i)) if EXPLAIN else None)
                for i in range(gateway_count)]
    os.unlink(config_file)
    return engine, ports, gateways


def fleet_kv_tokens():
    """The fleet's KV cache in tokens, from the emulator's own profile table (its KV column)."""
    import subprocess
    table = subprocess.run([BIN, "engine", "--model", MODEL, "--profile-table"],
                           capture_output=True, text=True, check=True).stdout
    per_gpu = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[1].isdigit():
            per_gpu[cells[0]] = int(cells[1])
    return sum(per_gpu.get(g, per_gpu.get(g.upper(), 0)) for g in GPUS)


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))] if values else float("nan")


async def run(workload, strategy):
    shape = shape_of(workload)
    engine, ports, gateways = start_fleet(strategy, shape.gateways)
    front = random.Random(SEED + 77)  # which gateway each request goes to
    cls, count = USERS[workload]
    if workload == "llmd":
        if LLMD_GROUPS > 0:
            Llmd.GROUPS = LLMD_GROUPS
        else:
            # The contexts together need about 3/4 of the fleet's KV cache.
            Llmd.GROUPS = max(1, int(0.75 * fleet_kv_tokens() / 6000))
        Llmd.CONTEXTS = None
        count = Llmd.GROUPS * LLMD_USERS
    users = [cls(random.Random(SEED * 1000 + u), u) for u in range(count)]
    records, samples = [], []
    try:
        before = [await get_metrics(p) for p in ports]
        t0 = time.time()
        end = t0 + shape.seconds

        async def one(u, censor):
            """One request of user u, recorded; returns the user's think time."""
            payload, session, think = u.next()
            headers = {"x-session-id": session} if strategy == "session" else {}
            sent = time.time()
            try:
                gports = gateways[front.randrange(len(gateways))][1]
                status, ttft, e2e, decision = await stream(gports[0], json.dumps(payload),
                                                           headers)
            except (asyncio.TimeoutError, OSError):
                status, ttft, e2e, decision = 0, None, time.time() - sent, None
            if ttft is None and censor:
                # Still waiting for its first token when it ended: it waited at least this long.
                # Counted so, not dropped, or an overloaded fleet would look faster.
                ttft = e2e
            records.append({"sent": sent - t0, "status": status, "ttft": ttft, "e2e": e2e,
                            "decision": decision, "session": session,
                            "tokens": len(json.dumps(payload["messages"])) // 4})
            return think

        async def user(u, index):
            # Staggered starts: users arrive over the first second.
            await asyncio.sleep(index / max(1, count))
            while time.time() < end:
                await asyncio.sleep(await one(u, False))

        async def sampler():
            while time.time() < end:
                loads = []
                for p in ports:
                    text = await get_metrics(p)
                    loads.append(metric(text, "vllm:num_requests_running") +
                                 metric(text, "vllm:num_requests_waiting"))
                if time.time() - t0 > shape.warmup:
                    samples.append(loads)
                await asyncio.sleep(0.25)

        async def open_loop():
            rng = random.Random(SEED + 900)
            tasks = []
            at = time.time()
            while True:
                at += rng.expovariate(LLMD_RATE)
                if at >= end:
                    break
                await asyncio.sleep(max(0.0, at - time.time()))
                tasks.append(asyncio.ensure_future(one(rng.choice(users), True)))
            await asyncio.gather(*tasks)

        if workload == "llmd" and LLMD_RATE > 0:
            await asyncio.gather(sampler(), open_loop())
        else:
            await asyncio.gather(sampler(), *(user(u, i) for i, u in enumerate(users)))
        after = [await get_metrics(p) for p in ports]
    finally:
        for gateway, _ in gateways:
            stop(gateway)
        stop(engine)
    hits = sum(metric(a, "vllm:prefix_cache_hits_total") - metric(b, "vllm:prefix_cache_hits_total")
               for a, b in zip(after, before))
    queries = sum(metric(a, "vllm:prefix_cache_queries_total") -
                  metric(b, "vllm:prefix_cache_queries_total") for a, b in zip(after, before))
    ratios = [max(s) / (sum(s) / len(s)) for s in samples if sum(s) > 0]
    ok = [r for r in records if r["status"] == 200 and r["sent"] >= shape.warmup]
    ttfts = [r["ttft"] for r in ok if r["ttft"] is not None]
    done = [r for r in ok if r["sent"] + r["e2e"] <= shape.seconds]
    return {"workload": workload, "strategy": strategy, "requests": len(ok),
            "ttft_p90": pct(ttfts, 0.9),
            "throughput": len(done) / max(1e-9, shape.seconds - shape.warmup),
            "groups": Llmd.GROUPS if workload == "llmd" else 0,
            "failed": sum(1 for r in records if r["status"] != 200),
            "ttft_p50": pct(ttfts, 0.5), "ttft_p99": pct(ttfts, 0.99),
            "e2e_p99": pct([r["e2e"] for r in ok], 0.99),
            "hit_rate": hits / queries if queries else 0.0,
            "max_mean": sum(ratios) / len(ratios) if ratios else float("nan"),
            "prompt_tokens_mean": sum(r["tokens"] for r in ok) / max(1, len(ok)),
            "records": records}


def explain_report(workload, strategy, records, say):
    """Writes the run's decisions (PREFIX_EXPLAIN=1) and says how TTFT splits by placement."""
    path = os.path.join(OUT, "decisions-%s-%s.jsonl" % (workload, strategy))
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps({k: r[k] for k in ("sent", "status", "ttft", "e2e", "decision",
                                                  "session")}) + "\n")
    # A miss on a session's first request is the cold start every strategy pays; a later one
    # means its prefix was evicted everywhere (or, approximate, unknown to this gateway).
    seen, where_of = set(), {}
    for r in sorted(records, key=lambda r: r["sent"]):
        where = placement(r["decision"])
        if where == "none":
            where = ("none, session seen before" if r["session"] in seen else
                     "none, first of its session")
        seen.add(r["session"])
        where_of[id(r)] = where
    warmup = shape_of(workload).warmup
    measured = [r for r in records if r["status"] == 200 and r["sent"] >= warmup and
                r["ttft"] is not None]
    for where in ("held", "away", "away, holder kv_critical", "none, first of its session",
                  "none, session seen before"):
        ttfts = [r["ttft"] for r in measured if where_of[id(r)] == where]
        if ttfts:
            say("    %-28s %5d requests (%4.1f%%)  TTFT p50 %7.0fms  p90 %7.0fms" % (
                where, len(ttfts), 100.0 * len(ttfts) / len(measured), pct(ttfts, 0.5) * 1e3,
                pct(ttfts, 0.9) * 1e3))
    say("    decisions: %s" % path)


def main():
    os.makedirs(OUT, exist_ok=True)
    log = open(os.path.join(OUT, "prefix.txt"), "w")

    def say(text=""):
        print(text, flush=True)
        log.write(text + "\n")
        log.flush()

    llmd = shape_of("llmd")
    say("command: make bench-prefix (PREFIX_GPUS=%s PREFIX_SECONDS=%g PREFIX_SEED=%d users "
        "chat/system/rag=%d/%d/%d, PREFIX_WORKERS=%d, PREFIX_GATEWAYS=%d; llmd: "
        "PREFIX_LLMD_SECONDS=%g PREFIX_LLMD_WARMUP=%g PREFIX_LLMD_GATEWAYS=%d "
        "PREFIX_LLMD_RATE=%g PREFIX_LLMD_USERS=%d)" % (
            ",".join(GPUS), SECONDS, SEED, CHAT_USERS, SYSTEM_USERS, RAG_USERS, WORKERS,
            GATEWAYS, llmd.seconds, llmd.warmup, llmd.gateways, LLMD_RATE, LLMD_USERS))
    say("machine: nproc=%d, load average %s at start, %s" % (
        os.cpu_count(), " ".join(open("/proc/loadavg").read().split()[:3]),
        time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())))
    results = []
    for workload in WORKLOADS:
        for strategy in STRATEGIES:
            r = asyncio.run(run(workload, strategy))
            results.append(r)
            say("  %-7s %-14s done: %d requests, mean prompt %.0f tokens" % (
                workload, strategy, r["requests"], r["prompt_tokens_mean"]))
            if EXPLAIN:
                explain_report(workload, strategy, r["records"], say)
    say("")
    status = 0
    for workload in WORKLOADS:
        rows = [r for r in results if r["workload"] == workload]
        base = next((r for r in rows if r["strategy"] == "load-balance"), None)
        say("%s:" % workload)
        say("  %-14s %8s %6s %10s %10s %10s %9s %9s %14s" % (
            "strategy", "requests", "failed", "TTFT p50", "TTFT p99", "E2E p99", "hit rate",
            "max/mean", "TTFT p50 vs LB"))
        for r in rows:
            ratio = r["ttft_p50"] / base["ttft_p50"] if base and base["ttft_p50"] > 0 else float(
                "nan")
            say("  %-14s %8d %6d %9.0fms %9.0fms %9.2fs %8.1f%% %9.2f %13.2fx" % (
                r["strategy"], r["requests"], r["failed"], r["ttft_p50"] * 1e3,
                r["ttft_p99"] * 1e3, r["e2e_p99"], 100 * r["hit_rate"], r["max_mean"], ratio))
        if workload == "llmd":
            offered = ("open loop, %g requests/s offered" % LLMD_RATE if LLMD_RATE > 0 else
                       "closed loop")
            say("  %d groups x %d users, %s, %d gateways, %gs (%gs warm-up); TTFT p90 and "
                "throughput (requests/s completed):" % (
                    rows[0]["groups"], LLMD_USERS, offered, shape_of("llmd").gateways,
                    shape_of("llmd").seconds, shape_of("llmd").warmup))
            for r in rows:
                say("  %-20s TTFT p90 %8.0fms  throughput %6.2f/s" % (
                    r["strategy"], r["ttft_p90"] * 1e3, r["throughput"]))
            approx = next((r for r in rows if r["strategy"] == "prefix-cache"), None)
            exact = next((r for r in rows if r["strategy"] == "prefix-cache-precise"), None)
            if approx and exact:
                goals = [("precise TTFT p90 <= 0.1x approximate",
                          exact["ttft_p90"] <= 0.1 * approx["ttft_p90"]),
                         ("precise throughput >= 1.2x approximate",
                          exact["throughput"] >= 1.2 * approx["throughput"])]
                if base:
                    goals.append(("approximate TTFT p90 < load-balance",
                                  approx["ttft_p90"] < base["ttft_p90"]))
                for what, ok in goals:
                    say("  goal %-40s %s" % (what, "PASS" if ok else "MISS"))
        pc = next((r for r in rows if r["strategy"] == "prefix-cache"), None)
        if workload == "chat" and pc and base:
            goals = [("TTFT p50 <= 0.5x load-balance", pc["ttft_p50"] <= 0.5 * base["ttft_p50"]),
                     ("E2E p99 <= load-balance", pc["e2e_p99"] <= base["e2e_p99"]),
                     ("max/mean in-flight <= 1.5", pc["max_mean"] <= 1.5)]
            for what, ok in goals:
                say("  goal %-32s %s" % (what, "PASS" if ok else "MISS"))
                if not ok:
                    status = 1
        say("")
    say("load average %s at the end" % " ".join(open("/proc/loadavg").read().split()[:3]))
    with open(os.path.join(OUT, "prefix.csv"), "w") as csv:
        csv.write("workload,strategy,requests,failed,ttft_p50_s,ttft_p99_s,e2e_p99_s,hit_rate,"
                  "max_mean_inflight,ttft_p90_s,throughput_rps\n")
        for r in results:
            csv.write("%s,%s,%d,%d,%.4f,%.4f,%.4f,%.4f,%.3f,%.4f,%.3f\n" % (
                r["workload"], r["strategy"], r["requests"], r["failed"], r["ttft_p50"],
                r["ttft_p99"], r["e2e_p99"], r["hit_rate"], r["max_mean"], r["ttft_p90"],
                r["throughput"]))
    return status


if __name__ == "__main__":
    sys.exit(main())
