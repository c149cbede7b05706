#!/usr/bin/env python3
"""HTTP load for bench/rest.sh: submissions over keep-alive connections
(PROCS processes x THREADS threads, one connection each), then
GET /slurm/v0.0.40/jobs timed (median of 7). Standard library only."""
import http.client, json, multiprocessing, os, statistics, sys, threading, time

HOST, PORT = os.environ["REST_ADDR"].split(":")
TOKEN = os.environ["SLURM_JWT"]
HEADERS = {"X-SLURM-USER-TOKEN": TOKEN, "Content-Type": "application/json"}
BODY = json.dumps({
    "script": "#!/bin/sh\ntrue\n",
    "job": {"name": "restbench", "hold": True, "current_working_directory": "/tmp",
            "environment": ["PATH=/bin:/usr/bin"]},
})


def submitter(n, errors):
    c = http.client.HTTPConnection(HOST, int(PORT))
    for _ in range(n):
        c.request("POST", "/slurm/v0.0.40/job/submit", BODY, HEADERS)
        r = c.getresponse()
        body = r.read()
        if r.status != 200:
            errors.append(body[:200])


def proc(n_threads, per_thread, q):
    errors = []
    ts = [threading.Thread(target=submitter, args=(per_thread, errors)) for _ in range(n_threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    q.put(errors)


def main():
    total = int(os.environ.get("N_JOBS", "10000"))
    procs = int(os.environ.get("PROCS", "4"))
    threads = int(os.environ.get("THREADS", "16"))
    per = total // (procs * threads)
    q = multiprocessing.Queue()
    t0 = time.monotonic()
    ps = [multiprocessing.Process(target=proc, args=(threads, per, q)) for _ in range(procs)]
    for p in ps:
        p.start()
    errors = [e for _ in ps for e in q.get()]
    for p in ps:
        p.join()
    dt = time.monotonic() - t0
    n = per * procs * threads
    print(f"HTTP submissions ({procs * threads} keep-alive connections): {n} in {dt:.2f} s = {n / dt:.0f} jobs/s, {len(errors)} errors")
    if errors:
        print("first error:", errors[0], file=sys.stderr)
        sys.exit(1)
    c = http.client.HTTPConnection(HOST, int(PORT))
    times, parse, count = [], [], 0
    pids = {k: os.environ.get(v) for k, v in (("droverctld", "CTLD_PID"), ("droverrestd", "REST_PID"))}
    cpu_before = {}
    for i in range(7):
        if i == 1:
            cpu_before = {k: cpu_secs(p) for k, p in pids.items() if p}
        t = time.monotonic()
        c.request("GET", "/slurm/v0.0.40/jobs", headers=HEADERS)
        r = c.getresponse()
        body = r.read()
        # Timed: request to last byte of the body read (what a portal
        # waits for before it can parse); the parse is timed apart.
        times.append((time.monotonic() - t) * 1000)
        t = time.monotonic()
        count = len(json.loads(body)["jobs"])
        parse.append((time.monotonic() - t) * 1000)
    print(f"GET /slurm/v0.0.40/jobs ({count} jobs, {len(body) // 1024} KiB): median {statistics.median(times):.1f} ms (min {min(times):.1f}, first {times[0]:.1f}) to the last byte read")
    print(f"  the client's json.loads of it, not in that figure: median {statistics.median(parse):.1f} ms")
    if cpu_before:
        per = ", ".join(f"{k} {(cpu_secs(pids[k]) - v) * 1000 / 6:.1f} ms" for k, v in cpu_before.items())
        print(f"CPU per GET (requests 2-7): {per}")


def cpu_secs(pid):
    """User + system CPU seconds of a process so far."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
