"""Connections and streams per gateway (`make bench-connections`), next to nginx.

Both proxies (one Switchyard worker, one nginx worker with `proxy_buffering off`) stand in front
of the same emulated fleet (CONN_ENGINES replicas of llama2-7b on A100, one engine process).

1. Idle keep-alive connections: CONN_IDLE client connections are opened in CONN_STEPS steps; each
   completes one request (GET /v1/models) and then stays open and silent. The proxy's RSS is read
   after every step; the slope of a least-squares line through (connections, RSS) is the memory
   per idle connection (goal: at most 16 KiB for Switchyard). Then every connection sends a
   second request: each must still answer 200.
2. Concurrent streams: CONN_STREAMS streaming chat completions (CONN_TOKENS output tokens each),
   each on its own connection, all open at once. Counted: streams that ended with [DONE], errors,
   the proxy's CPU time over the phase (utime + stime from /proc), the SSE events relayed, and so
   CPU per streamed event and events per CPU-second; the ratio of Switchyard's CPU per event to
   nginx's is the stream goal (at most 1.0).

Figures: a table on stdout, CSV in CONN_OUT (default build/bench-connections). Only 127.0.0.1;
every process started here is stopped. Environment: CONN_IDLE=10000 CONN_STEPS=4
CONN_STREAMS=5000 CONN_TOKENS=200 CONN_ENGINES=24 CONN_TARGETS=switchyard,nginx
SWITCHYARD=build/release/switchyard. CONN_SYSCALLS=1 also counts the proxy's system calls over the
stream phase (`perf stat` on the syscall tracepoints, reads that found nothing counted apart; a
little slower, so compare CPU figures of such runs only with each other) into
CONN_OUT/syscalls-<proxy>.txt; CONN_PERF=1 records the proxy's profile over the stream phase
(`perf record -g`) into CONN_OUT/perf-<proxy>.data.
"""
import asyncio
import csv
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_procs  # noqa: E402

BIN = os.environ.get("SWITCHYARD", "build/release/switchyard")
IDLE = int(os.environ.get("CONN_IDLE", "10000"))
STEPS = int(os.environ.get("CONN_STEPS", "4"))
STREAMS = int(os.environ.get("CONN_STREAMS", "5000"))
TOKENS = int(os.environ.get("CONN_TOKENS", "200"))
ENGINES = int(os.environ.get("CONN_ENGINES", "24"))
TARGETS = os.environ.get("CONN_TARGETS", "switchyard,nginx").split(",")
SYSCALLS = os.environ.get("CONN_SYSCALLS", "0") == "1"
PERF = os.environ.get("CONN_PERF", "0") == "1"
OUT = os.environ.get("CONN_OUT", "build/bench-connections")
MODEL = "llama2-7b"
# The calls a proxy spends a stream's events on, counted by perf's tracepoints (far lighter
# than strace, which stops the process at every call).
COUNTED_SYSCALLS = ("read", "recvfrom", "recvmsg", "readv", "write", "sendto", "sendmsg", "writev",
                    "epoll_wait", "epoll_ctl", "timerfd_settime", "io_uring_enter")
OPEN_BATCH = 500  # connections opened concurrently at a time
TICKS = os.sysconf("SC_CLK_TCK")
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def rss_kib(pid):
    with open("/proc/%d/statm" % pid) as f:
        return int(f.read().split()[1]) * PAGE_KIB


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def slope(points):
    """Least-squares slope of y over x."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else float("nan")


async def read_response(reader):
    """Reads one HTTP/1.1 response (Content-Length or chunked); returns (status, body)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
    if "content-length" in headers:
        return status, await reader.readexactly(int(headers["content-length"]))
    body = bytearray()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                return status, bytes(body)
            body += await reader.readexactly(size)
            await reader.readexactly(2)
    body += await reader.read()
    return status, bytes(body)


def dechunk(data):
    """The payload of a whole chunked body (chunk boundaries fall anywhere in the SSE text)."""
    out, at = bytearray(), 0
    while True:
        eol = data.index(b"\r\n", at)
        size = int(data[at:eol].split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += data[eol + 2:eol + 2 + size]
        at = eol + 2 + size + 2


MODELS_REQUEST = b"GET /v1/models HTTP/1.1\r\nHost: bench\r\n\r\n"


async def open_idle(port, count):
    """Opens `count` connections, each completing one request; returns the open ones."""
    async def one():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(MODELS_REQUEST)
        status, _ = await read_response(reader)
        if status != 200:
            raise RuntimeError("GET /v1/models answered %d" % status)
        return reader, writer
    conns, errors = [], 0
    for start in range(0, count, OPEN_BATCH):
        results = await asyncio.gather(*(one() for _ in range(min(OPEN_BATCH, count - start))),
                                       return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException):
                errors += 1
            else:
                conns.append(r)
    return conns, errors


async def reuse(conns):
    """A second request on every idle connection; returns how many failed."""
    async def one(conn):
        reader, writer = conn
        writer.write(MODELS_REQUEST)
        status, _ = await read_response(reader)
        return status == 200
    failed = 0
    for start in range(0, len(conns), OPEN_BATCH):
        results = await asyncio.gather(*(one(c) for c in conns[start:start + OPEN_BATCH]),
                                       return_exceptions=True)
        failed += sum(1 for r in results if r is not True)
    return failed


async def close_all(conns):
    for _, writer in conns:
        writer.close()
    await asyncio.gather(*(w.wait_closed() for _, w in conns), return_exceptions=True)


async def idle_phase(name, port, pid):
    base = rss_kib(pid)
    points, conns, errors = [(0, base)], [], 0
    step = max(1, IDLE // STEPS)
    while len(conns) + errors < IDLE:
        more, failed = await open_idle(port, min(step, IDLE - len(conns) - errors))
        conns += more
        errors += failed
        await asyncio.sleep(0.5)
        points.append((len(conns), rss_kib(pid)))
    reuse_failed = await reuse(conns)
    per_conn = slope(points)
    await close_all(conns)
    return {"target": name, "idle_connections": len(conns), "open_errors": errors,
            "reuse_failed": reuse_failed, "rss_base_kib": base, "rss_peak_kib": points[-1][1],
            "kib_per_idle_connection": round(per_conn, 2)}


def stream_request():
    body = ('{"model":"%s","stream":true,"max_tokens":%d,"ignore_eos":true,'
            '"messages":[{"role":"user","content":"Tell me a story about a lighthouse."}]}'
            % (MODEL, TOKENS)).encode()
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json"
            b"\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body)) + body


async def stream_phase(name, port, pid):
    request = stream_request()
    streaming = [0]  # streams whose response head has arrived and whose body has not ended

    async def one():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            streaming[0] += 1
            try:
                body = await reader.read(-1)  # Connection: close: the body ends at EOF
            finally:
                streaming[0] -= 1
            status = int(head.split(b" ", 2)[1])
            if b"transfer-encoding: chunked" in head.lower():
                body = dechunk(body)
            return status, body.count(b"data: {"), body.rstrip().endswith(b"data: [DONE]")
        finally:
            writer.close()

    tracer = None
    if SYSCALLS:
        events = []
        for call in COUNTED_SYSCALLS:
            events += ["-e", "syscalls:sys_enter_" + call]
        for call in ("recvfrom", "recvmsg", "read"):  # reads that found nothing (EAGAIN)
            events += ["-e", "syscalls:sys_exit_" + call, "--filter", "ret == -11"]
        tracer = subprocess.Popen(["perf", "stat"] + events + ["-p", str(pid), "-o",
                                   os.path.join(OUT, "syscalls-%s.txt" % name)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elif PERF:
        tracer = subprocess.Popen(["perf", "record", "-g", "-p", str(pid), "-o",
                                   os.path.join(OUT, "perf-%s.data" % name)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if tracer is not None:
        await asyncio.sleep(1)  # attached before the first stream
    cpu0, t0, rss_peak, peak = cpu_seconds(pid), time.time(), rss_kib(pid), 0
    tasks = [asyncio.ensure_future(one()) for _ in range(STREAMS)]
    while not all(t.done() for t in tasks):
        await asyncio.sleep(0.1)
        rss_peak = max(rss_peak, rss_kib(pid))
        peak = max(peak, streaming[0])
    cpu, wall = cpu_seconds(pid) - cpu0, time.time() - t0
    if tracer is not None:
        tracer.send_signal(2)  # perf writes its counts or its profile on SIGINT
        tracer.wait(timeout=30)
    ok = events = errors = 0
    reasons = {}
    for t in tasks:
        if t.exception() is not None:
            reason = type(t.exception()).__name__
        else:
            status, n, done = t.result()
            events += n
            if status == 200 and done:
                ok += 1
                continue
            reason = "HTTP %d" % status if status != 200 else "no [DONE]"
        errors += 1
        reasons[reason] = reasons.get(reason, 0) + 1
    if reasons:
        print("stream errors through %s: %s" % (name, reasons), flush=True)
    return {"target": name, "streams": STREAMS, "completed": ok, "errors": errors,
            "peak_open": peak, "events": events, "wall_s": round(wall, 1),
            "cpu_s": round(cpu, 2), "rss_peak_kib": rss_peak,
            "cpu_us_per_event": round(cpu / events * 1e6, 2) if events else float("nan"),
            "events_per_cpu_s": round(events / cpu) if cpu else float("nan")}


def nginx_worker(master_pid):
    """nginx's single worker process (its CPU and memory are the proxy's)."""
    deadline = time.time() + 10
    while time.time() < deadline:
        out = subprocess.run(["pgrep", "-P", str(master_pid)], capture_output=True, text=True)
        if out.stdout.strip():
            return int(out.stdout.split()[0])
        time.sleep(0.1)
    raise RuntimeError("nginx started no worker")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(work, ports):
    port = free_port()
    servers = "".join("    server 127.0.0.1:%d;\n" % p for p in ports)
    conf = os.path.join(work, "nginx.conf")
    with open(conf, "w") as f:
        f.write("""worker_processes 1;
worker_rlimit_nofile 65536;
daemon off;
pid %(w)s/nginx.pid;
error_log %(w)s/error.log warn;
events { worker_connections 30000; }
http {
  access_log off;
  client_body_temp_path %(w)s/cb; proxy_temp_path %(w)s/p; fastcgi_temp_path %(w)s/f;
  uwsgi_temp_path %(w)s/u; scgi_temp_path %(w)s/s;
  keepalive_timeout 300s;
  keepalive_requests 100000000;
  upstream engines {
    least_conn;
%(servers)s    keepalive 512;
  }
  server {
    listen 127.0.0.1:%(port)d backlog=65535;
    location / {
      proxy_pass http://engines;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 300s;
    }
  }
}
""" % {"w": work, "servers": servers, "port": port})
    proc = subprocess.Popen(["nginx", "-p", work, "-e", work + "/error.log", "-c", conf],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, port


def wait_http(port):
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                  "--max-time", "1", "http://127.0.0.1:%d/v1/models" % port],
                                 capture_output=True, text=True)
            if out.stdout == "200":
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError("nothing answers on port %d" % port)


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    need = IDLE + STREAMS + 1000
    if hard < need:
        sys.exit("connections.py: the open-files hard limit %d is below %d" % (hard, need))
    os.makedirs(OUT, exist_ok=True)
    work = tempfile.mkdtemp(prefix="switchyard-conn.")
    procs = []
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False, dir=work) as f:
            for i in range(ENGINES):
                f.write("- {gpu: A100, model: %s, seed: %d}\n" % (MODEL, i + 1))
        engine, ports = bench_procs.start(BIN, ["engine", "--replicas", f.name])
        procs.append(engine)
        targets = {}
        if "switchyard" in TARGETS:
            lines = "".join("      - address: 127.0.0.1:%d\n" % p for p in ports)
            config = os.path.join(work, "gateway.yaml")
            with open(config, "w") as f:
                f.write("listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\n"
                        "models:\n  - name: %s\n    replicas:\n%s" % (MODEL, lines))
            gateway, gports = bench_procs.start(BIN, ["gateway", "--config", config])
            procs.append(gateway)
            targets["switchyard"] = (gports[0], gateway.pid)
        if "nginx" in TARGETS:
            nginx, nport = start_nginx(work, ports)
            procs.append(nginx)
            wait_http(nport)
            targets["nginx"] = (nport, nginx_worker(nginx.pid))
        print("machine: nproc=%d load=%s; engines=%d A100 replicas; idle=%d in %d steps; "
              "streams=%d x %d tokens" % (os.cpu_count(), os.getloadavg()[0], ENGINES, IDLE,
                                          STEPS, STREAMS, TOKENS))
        idle_rows, stream_rows = [], []
        for name, (port, pid) in targets.items():
            idle_rows.append(asyncio.run(idle_phase(name, port, pid)))
            print("idle    %s" % idle_rows[-1], flush=True)
            stream_rows.append(asyncio.run(stream_phase(name, port, pid)))
            print("streams %s" % stream_rows[-1], flush=True)
        report(idle_rows, stream_rows)
    finally:
        for p in reversed(procs):
            bench_procs.stop(p)
        shutil.rmtree(work, ignore_errors=True)


def report(idle_rows, stream_rows):
    for rows, name in ((idle_rows, "idle.csv"), (stream_rows, "streams.csv")):
        with open(os.path.join(OUT, name), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
    print("\n| target | idle conns | failed | KiB per idle conn | streams ok | errors | peak open "
          "| events | CPU s | CPU us/event | events per CPU s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for i, s in zip(idle_rows, stream_rows):
        print("| %s | %d | %d | %.1f | %d | %d | %d | %d | %.2f | %.2f | %s |" % (
            i["target"], i["idle_connections"], i["open_errors"] + i["reuse_failed"],
            i["kib_per_idle_connection"], s["completed"], s["errors"], s["peak_open"],
            s["events"], s["cpu_s"], s["cpu_us_per_event"], s["events_per_cpu_s"]))
    by = {s["target"]: s for s in stream_rows}
    sy = next((i for i in idle_rows if i["target"] == "switchyard"), None)
    failed = False
    if sy:
        ok = (sy["idle_connections"] == IDLE and sy["open_errors"] + sy["reuse_failed"] == 0)
        mem = sy["kib_per_idle_connection"] <= 16
        print("goal %d idle connections without errors: %s" % (IDLE, "PASS" if ok else "MISS"))
        print("goal <= 16 KiB per idle connection: %.1f KiB %s"
              % (sy["kib_per_idle_connection"], "PASS" if mem else "MISS"))
        s = by["switchyard"]
        ok = s["completed"] == STREAMS and s["errors"] == 0
        print("goal %d concurrent streams without errors: %s" % (STREAMS, "PASS" if ok else "MISS"))
        failed = s["errors"] > 0 and s["completed"] == 0
    if "switchyard" in by and "nginx" in by:
        ratio = by["switchyard"]["cpu_us_per_event"] / by["nginx"]["cpu_us_per_event"]
        print("goal CPU per streamed event <= 1.0x nginx: %.2fx %s"
              % (ratio, "PASS" if ratio <= 1.0 else "MISS"))
    if failed:
        sys.exit("connections.py: no stream through Switchyard completed")


if __name__ == "__main__":
    main()
