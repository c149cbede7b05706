#!/usr/bin/env python3
"""Hold many TCP connections to the controller (bench/connections.sh).

    conn_flood.py PORT CONNS SECONDS MODE [PER_ADDR]

MODE h2:        each connection sends the HTTP/2 client preface and an empty
                SETTINGS frame, then nothing (an idle client).
MODE slowloris: each connection sends the preface one byte every 5 s and
                never finishes it.

Connections come from source addresses 127.0.1.1, 127.0.1.2, ... with at
most PER_ADDR (default 400) each, below the controller's per-address limit,
so the flood is many hosts' worth. Raises its own RLIMIT_NOFILE to the hard
limit. Prints one JSON line: opened, refused at connect, closed by the
server (and when: seconds after the flood was up).
"""
import json
import resource
import selectors
import socket
import sys
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def main():
    port, conns, seconds, mode = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    per_addr = int(sys.argv[5]) if len(sys.argv) > 5 else 400
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    socks = []
    refused = 0
    errors = {}
    t0 = time.time()
    for i in range(conns):
        src = "127.0.1.%d" % (1 + i // per_addr)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((src, 0))
            s.settimeout(10)
            s.connect(("127.0.0.1", port))
            if mode == "h2":
                s.sendall(PREFACE + SETTINGS)
            else:
                s.sendall(PREFACE[:1])
            s.setblocking(False)
            socks.append(s)
        except OSError as e:
            refused += 1
            errors[e.__class__.__name__ + ":" + str(e.errno)] = errors.get(e.__class__.__name__ + ":" + str(e.errno), 0) + 1
            s.close()
    up = time.time()
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    closed_at = []
    sent = {id(s): 1 for s in socks}
    next_trickle = up + 5
    alive = set(id(s) for s in socks)
    by_id = {id(s): s for s in socks}
    while time.time() - up < seconds:
        for key, _ in sel.select(timeout=0.5):
            s = key.fileobj
            try:
                data = s.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                closed_at.append(round(time.time() - up, 1))
                sel.unregister(s)
                alive.discard(id(s))
                s.close()
        if mode == "slowloris" and time.time() >= next_trickle:
            next_trickle += 5
            for k in list(alive):
                s = by_id[k]
                n = sent[k]
                if n < len(PREFACE) - 1:
                    try:
                        s.send(PREFACE[n:n + 1])
                        sent[k] = n + 1
                    except OSError:
                        pass
    closed_at.sort()
    print(json.dumps({
        "mode": mode,
        "wanted": conns,
        "opened": len(socks),
        "refused_at_connect": refused,
        "errors": errors,
        "open_seconds": round(up - t0, 1),
        "closed_by_server": len(closed_at),
        "first_closed_s": closed_at[0] if closed_at else None,
        "median_closed_s": closed_at[len(closed_at) // 2] if closed_at else None,
        "still_open_at_end": len(alive),
    }))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
