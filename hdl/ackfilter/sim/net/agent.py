"""The TCP endpoints of the experiments, run inside the namespaces.

    python -m ackfilter.sim.net.agent server --addr A --port P --out FILE [--cc cubic]
    python -m ackfilter.sim.net.agent client --spec FILE --out FILE [--cc cubic]

The server answers one request line per connection: ``GET N`` sends N bytes
and closes (N = -1: sends until the peer closes), ``PUT`` receives until the
peer closes. The client runs the jobs of its spec (a JSON list) at their start
times: ``download`` (GET -1 for ``duration`` seconds), ``upload`` (PUT for
``duration`` seconds) and ``page`` (Wu & Williamson's page: the document on
one connection, then its objects on parallel connections; ``repeat`` times,
``gap`` seconds apart) and ``probe`` (a small UDP datagram to the server's
echo on the same port number, ``hz`` times a second, for the round-trip time
under load). An upload or probe with ``stop_with: K`` ends when job K does;
an upload with ``src`` connects from that local address (another LAN host).
Times are ``time.monotonic()`` seconds, which every namespace of the machine
shares.

Each side writes what it received as JSON to ``--out``: per connection the
bytes received per ``BIN_S`` interval (``{"t0": first bin's start, "bins":
[...]}``; the server's uploads with the peer's address), and for pages the
time each took; for a probe, each datagram's send time and round-trip time
(``null``: no echo came back). The server writes when it gets
SIGTERM; so does a client stopped before its jobs are done, with what it has
(a page job then says ``incomplete`` and when its unfinished page started).
"""

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time

BIN_S = 0.1
#: A probe datagram's payload: sequence number and send time, padded (an
#: ICMP echo's size: 28 + 56 bytes on the wire with its headers).
PROBE_BYTES = 56
#: An echo later than this after its datagram counts as lost (a job's ``timeout``).
PROBE_TIMEOUT_S = 2.0
TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
_CHUNK = bytes(range(256)) * 256        # 64 KiB


class Recorder:
    """Bytes received per BIN_S interval."""

    def __init__(self):
        self.bins = {}
        self.lock = threading.Lock()

    def add(self, n, t=None):
        k = int((time.monotonic() if t is None else t) / BIN_S)
        with self.lock:
            self.bins[k] = self.bins.get(k, 0) + n

    def dump(self):
        with self.lock:
            if not self.bins:
                return {"t0": None, "bins": []}
            lo, hi = min(self.bins), max(self.bins)
            return {"t0": lo * BIN_S, "bins": [self.bins.get(k, 0) for k in range(lo, hi + 1)]}


def _cc(sock, cc):
    if cc:
        sock.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, cc.encode())


def _send_until(sock, deadline, limit=-1):
    sent = 0
    while (deadline is None or time.monotonic() < deadline) and (limit < 0 or sent < limit):
        n = len(_CHUNK) if limit < 0 else min(len(_CHUNK), limit - sent)
        sock.settimeout(None if deadline is None else max(0.01, deadline - time.monotonic()))
        try:
            sent += sock.send(memoryview(_CHUNK)[:n])
        except (socket.timeout, TimeoutError):
            continue
        except OSError:
            break
    return sent


def _recv_until(sock, rec, deadline=None):
    total = 0
    while deadline is None or time.monotonic() < deadline:
        sock.settimeout(None if deadline is None else max(0.01, deadline - time.monotonic()))
        try:
            data = sock.recv(1 << 16)
        except (socket.timeout, TimeoutError):
            continue
        except OSError:
            break
        if not data:
            break
        total += len(data)
        if rec is not None:
            rec.add(len(data))
    return total


# --- server -----------------------------------------------------------------------

def server(args):
    conns = {}
    lock = threading.Lock()
    stop = threading.Event()

    def write_out(*_):
        stop.set()
        with lock:
            out = {str(k): {"kind": v["kind"], "peer": v["peer"], **v["rec"].dump()}
                   for k, v in conns.items()}
        with open(args.out, "w") as f:
            json.dump({"connections": out}, f)
        sys.exit(0)

    signal.signal(signal.SIGTERM, write_out)
    signal.signal(signal.SIGINT, write_out)
    ls = socket.socket(socket.AF_INET6 if ":" in args.addr else socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    _cc(ls, args.cc)
    ls.bind((args.addr, args.port))
    ls.listen(64)
    echo = socket.socket(socket.AF_INET6 if ":" in args.addr else socket.AF_INET, socket.SOCK_DGRAM)
    echo.bind((args.addr, args.port))

    def echo_loop():
        while True:
            data, peer = echo.recvfrom(2048)
            echo.sendto(data, peer)

    threading.Thread(target=echo_loop, daemon=True).start()
    print("listening", flush=True)

    def handle(sock, peer, cid):
        _cc(sock, args.cc)
        raw = b""
        while not raw.endswith(b"\n") and len(raw) < 64:     # byte by byte: no read-ahead
            b = sock.recv(1)
            if not b:
                break
            raw += b
        line = raw.decode(errors="replace").split()
        if not line:
            sock.close()
            return
        if line[0] == "GET" and len(line) == 2:
            _send_until(sock, None, int(line[1]))
            try:
                sock.shutdown(socket.SHUT_WR)
                sock.settimeout(5)
                while sock.recv(4096):
                    pass
            except OSError:
                pass
        elif line[0] == "PUT":
            rec = Recorder()
            with lock:
                conns[cid] = {"kind": "upload", "peer": peer[0], "rec": rec}
            _recv_until(sock, rec)
        sock.close()

    cid = 0
    while not stop.is_set():
        sock, peer = ls.accept()
        cid += 1
        threading.Thread(target=handle, args=(sock, peer, cid), daemon=True).start()


# --- client -------------------------------------------------------------------------

#: ``struct tcp_info`` (linux/tcp.h): ``tcpi_total_retrans`` is the u32 at
#: byte 100, the segments this socket sent again (SYNs included).
_TCP_INFO_LEN, _TOTAL_RETRANS_AT = 104, 100


def _retrans(sock):
    """Segments ``sock`` has retransmitted so far: on the client, what the
    uplink lost of this connection's SYN, request or data."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_LEN)
    return int.from_bytes(info[_TOTAL_RETRANS_AT:_TOTAL_RETRANS_AT + 4], sys.byteorder)


def _connect(addr, port, cc, src=None):
    """A connection to ``addr``, from the local address ``src`` when given
    (another LAN host's address on the same interface)."""
    s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_STREAM)
    _cc(s, cc)
    if src is not None:
        s.bind((src, 0))
    s.connect((addr, port))
    return s


def _fetch(addr, port, cc, nbytes, retrans=None):
    """Fetch ``nbytes``; appends the connection's retransmissions to ``retrans``."""
    s = _connect(addr, port, cc)
    s.sendall(f"GET {nbytes}\n".encode())
    got = _recv_until(s, None)
    if retrans is not None:
        retrans.append(_retrans(s))
    s.close()
    if got != nbytes:
        raise RuntimeError(f"fetched {got} of {nbytes} bytes")


def _probe(job, stop, partial):
    """Send a datagram every 1/hz s from ``start`` until ``start + duration``
    (or ``stop`` is set) and time each echo; returns ``[[t_send, rtt_s or
    None], ...]``, kept current in ``partial["samples"]``."""
    import struct
    addr, port, hz = job["addr"], job["port"], float(job.get("hz", 20))
    timeout = float(job.get("timeout", PROBE_TIMEOUT_S))
    s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((addr, port))
    samples = partial["samples"]
    lock = threading.Lock()
    done = threading.Event()

    def receive():
        s.settimeout(0.2)
        while not done.is_set():
            try:
                data = s.recv(2048)
            except (socket.timeout, TimeoutError):
                continue
            except OSError:
                continue                   # e.g. ICMP unreachable from a datagram lost on the way
            t = time.monotonic()
            if len(data) < 16:
                continue
            seq, sent = struct.unpack("!Qd", data[:16])
            with lock:
                if seq < len(samples) and samples[seq][1] is None and t - sent <= timeout:
                    samples[seq][1] = t - sent

    rx = threading.Thread(target=receive, daemon=True)
    rx.start()
    end = job["start"] + job["duration"]
    seq = 0
    while True:
        due = job["start"] + seq / hz
        if due >= end:
            break
        time.sleep(max(0.0, due - time.monotonic()))
        if stop is not None and stop.is_set():
            break
        t = time.monotonic()
        with lock:
            samples.append([t, None])
        try:
            s.send(struct.pack("!Qd", seq, t).ljust(PROBE_BYTES, b"\0"))
        except OSError:
            pass                           # counted as lost
        seq += 1
    time.sleep(timeout)                    # the last echoes
    done.set()
    rx.join()
    s.close()
    with lock:
        return [list(x) for x in samples]


def client(args):
    with open(args.spec) as f:
        jobs = json.load(f)
    results = [None] * len(jobs)
    partial = [None] * len(jobs)          # what a job has so far, written if we are stopped
    out_lock = threading.Lock()

    def write_out(incomplete=False):
        with out_lock:
            res = [r if r is not None else (dict(p, incomplete=True) if p is not None else None)
                   for r, p in zip(results, partial)]
            with open(args.out, "w") as f:
                json.dump({"jobs": res, "stopped": incomplete}, f)

    def on_term(*_):
        write_out(incomplete=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)

    def run(i, job):
        time.sleep(max(0.0, job["start"] - time.monotonic()))
        kind = job["kind"]
        try:
            if kind == "download":
                rec = Recorder()
                s = _connect(job["addr"], job["port"], args.cc)
                s.sendall(b"GET -1\n")
                _recv_until(s, rec, job["start"] + job["duration"])
                s.close()
                results[i] = {"kind": kind, **rec.dump()}
            elif kind == "upload":
                s = _connect(job["addr"], job["port"], args.cc, job.get("src"))
                s.sendall(b"PUT\n")
                deadline = job["start"] + job["duration"]
                if "stop_with" in job:      # until another job is over (or the deadline)
                    other = done[job["stop_with"]]
                    sent = 0
                    while not other.is_set() and time.monotonic() < deadline:
                        sent += _send_until(s, min(deadline, time.monotonic() + 0.2))
                else:
                    sent = _send_until(s, deadline)
                retrans = _retrans(s)
                s.close()
                results[i] = {"kind": kind, "sent": sent, "retrans": retrans}
            elif kind == "probe":
                partial[i] = {"kind": kind, "samples": []}
                stop = done[job["stop_with"]] if "stop_with" in job else None
                results[i] = {"kind": kind, "hz": job.get("hz", 20),
                              "samples": _probe(job, stop, partial[i])}
            elif kind == "page":
                times, spans, retrans = [], [], []
                for r in range(job.get("repeat", 1)):
                    if r:
                        time.sleep(job.get("gap", 1.0))
                    t = time.monotonic()
                    partial[i] = {"kind": kind, "page_times": list(times), "spans": list(spans),
                                  "started": t}
                    _fetch(job["addr"], job["port"], args.cc, job["document"], retrans)
                    ts = [threading.Thread(target=_fetch, args=(job["addr"], job["port"], args.cc, n, retrans))
                          for n in job["objects"]]
                    for th in ts:
                        th.start()
                    for th in ts:
                        th.join()
                    times.append(time.monotonic() - t)
                    spans.append((t, t + times[-1]))
                    partial[i] = {"kind": kind, "page_times": list(times), "spans": list(spans),
                                  "started": t}
                results[i] = {"kind": kind, "page_times": times, "spans": spans,
                              "retrans": sum(retrans), "connections": len(retrans)}
            else:
                raise ValueError(f"unknown job kind {kind!r}")
        except Exception as e:   # reported, not raised: the other jobs' figures still count
            results[i] = {"kind": kind, "error": f"{type(e).__name__}: {e}"}

    done = [threading.Event() for _ in jobs]

    def run_and_mark(i, job):
        try:
            run(i, job)
        finally:
            done[i].set()

    threads = [threading.Thread(target=run_and_mark, args=(i, j), daemon=True) for i, j in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    write_out()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m ackfilter.sim.net.agent", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("server")
    s.add_argument("--addr", required=True)
    s.add_argument("--port", type=int, default=5001)
    s.add_argument("--out", required=True)
    s.add_argument("--cc", default="cubic")
    c = sub.add_parser("client")
    c.add_argument("--spec", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--cc", default="cubic")
    args = ap.parse_args(argv)
    {"server": server, "client": client}[args.cmd](args)


if __name__ == "__main__":
    main()
