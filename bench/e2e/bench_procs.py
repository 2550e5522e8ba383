"""Pieces the Python e2e benchmarks share: starting and stopping `switchyard` processes (engine
or gateway) on OS-chosen loopback ports, and reading a metric from Prometheus text."""
import signal
import subprocess
import threading
import time


def start(binary, args, log=None, attempts=3):
    """Starts `BINARY ARGS` and returns (process, ports) from its `listening` line. What it prints
    after that (its log) is read on a thread, so that a full pipe never stalls it, into the file
    `log` or nowhere. A process that exits before it listens is started again, up to `attempts`
    times: a port chosen free by the caller may have been taken meanwhile, and one lost start
    must not end a benchmark that has run for half an hour. The error says what it printed."""
    printed = []
    for _ in range(attempts):
        proc = subprocess.Popen([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        printed = []
        deadline = time.time() + 30
        while time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("listening"):
                threading.Thread(target=_drain, args=(proc.stdout, log), daemon=True).start()
                return proc, [int(a.rsplit(":", 1)[1]) for a in line.split()[1:]]
            printed.append(line.rstrip())
        proc.kill()
        proc.wait()
        time.sleep(1)
    raise RuntimeError("switchyard %s did not start; it printed: %s" % (
        args[0], " | ".join(printed[-5:]) or "nothing"))


def _drain(stream, log):
    out = open(log, "w") if log else None
    try:
        for line in stream:
            if out:
                out.write(line)
                out.flush()
    finally:
        if out:
            out.close()


def stop(proc):
    """SIGTERM, then SIGKILL after 15 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def metric(text, name):
    """The sum of every sample of metric `name` (any labels) in Prometheus text."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and (len(line) == len(name) or line[len(name)] in " {"):
            total += float(line.rsplit(" ", 1)[1])
    return total
