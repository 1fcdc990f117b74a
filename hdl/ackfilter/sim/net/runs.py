"""One run of a scenario with a variant: fresh namespaces and bridge
(:class:`~.testbed.Testbed`), a server agent, a client agent with the
scenario's jobs, then the figures read from what the agents and the bridge
recorded (goodput, the probe's delays, Jain's index)."""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ...paths import HDL_DIR
from .bridge import build_bridge
from .scenarios import LEAD_S, PORT, PROBE_SETTLE_S, S7_HOSTS, cake_text, grade
from .testbed import CLIENT_IPS, SERVER_IP, Testbed, TestbedError
from .variants import VARIANTS, default_variant

__all__ = ["run_one", "probe_figures", "series_rate", "host_goodputs", "jain", "S7_RULES"]


def _goodput(rec, t0, window):
    """bit/s of a receiver's bins over ``window`` (seconds from ``t0``)."""
    if not rec or rec.get("t0") is None:
        return 0.0
    from .agent import BIN_S
    a, b = t0 + window[0], t0 + window[1]
    total = 0
    for i, n in enumerate(rec["bins"]):
        start = rec["t0"] + i * BIN_S
        if a - 1e-6 <= start < b - 1e-6:
            total += n
    return 8 * total / (window[1] - window[0])


def _quantile(xs, q):
    """The ``q`` quantile of ``xs`` (sorted or not), by linear interpolation."""
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * q
    i = int(k)
    return xs[i] if i + 1 >= len(xs) else xs[i] + (xs[i + 1] - xs[i]) * (k - i)


def probe_figures(samples, idle, window):
    """The probe's figures from its ``samples`` (``[[t_send, rtt_s or None], ...]``):
    the idle round trip (median of the answered probes sent in ``idle``, an
    ``(a, b)`` of ``time.monotonic()`` seconds), and over ``window`` the
    round trip added to it (median, p95, p99 of the answered probes, ms),
    the share lost and the grade of the median. ``None`` without idle
    answers or without probes in the window."""
    idle_rtts = [r for t, r in samples if idle[0] <= t < idle[1] and r is not None]
    sent = [(t, r) for t, r in samples if window[0] <= t < window[1]]
    if not idle_rtts or not sent:
        return None
    base = statistics.median(idle_rtts)
    added = [1e3 * (r - base) for _, r in sent if r is not None]
    lost = sum(1 for _, r in sent if r is None) / len(sent)
    med = _quantile(added, 0.5)
    out = {"idle_ms": round(1e3 * base, 2), "sent": len(sent), "loss": round(lost, 4),
           "added_ms": {k: (None if v is None else round(v, 2)) for k, v in
                        (("median", med), ("p95", _quantile(added, 0.95)), ("p99", _quantile(added, 0.99)))},
           "grade": grade(med) if lost < 0.5 else "F"}
    return out


def series_rate(series, start, a, b):
    """bit/s of the frames other than pure ACKs a bridge's per-second
    ``series`` (``[[acks, others, other_bytes], ...]``, second k from
    ``start + k``) carried in the whole seconds inside ``[a, b)`` (all
    times ``time.monotonic()``); ``None`` when no whole second fits."""
    import math
    first, last = math.ceil(a - start - 1e-9), math.floor(b - start + 1e-9)
    if last <= first or first < 0:
        return None
    got = [series[k][2] if k < len(series) else 0 for k in range(first, last)]
    return 8 * sum(got) / (last - first)


def host_goodputs(uploads, t0, window, host_uploads):
    """``(per_flow, per_host)`` bit/s over ``window`` of the server's
    ``uploads`` (each with its ``peer``), host k at ``CLIENT_IPS[k]`` with
    ``host_uploads[k]`` uploads. An upload the server never saw (its SYN or
    request lost until the end) is a flow locked out: 0, not a failed run."""
    per_flow, per_host = [], []
    for ip, n in zip(CLIENT_IPS, host_uploads):
        mine = [_goodput(c, t0, window) for c in uploads if c.get("peer") == ip]
        mine += [0.0] * (n - len(mine))
        per_flow += mine
        per_host.append(sum(mine))
    return per_flow, per_host


def jain(xs):
    xs = [float(x) for x in xs]
    if not xs or not any(xs):
        return None
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def _s7_rule(host_shares):
    """The S7 row a scheduler would reach that gives each host ``host_shares``
    of the link, split evenly among the host's uploads."""
    flows = [h / n for h, n in zip(host_shares, S7_HOSTS) for _ in range(n)]
    return (" + ".join(f"{h:.0%}" for h in host_shares)
            + f"; {jain(host_shares):.3f} / {jain(flows):.3f}")


#: What S7 gives by each rule (shares of the uplink), beside the runs: CAKE's
#: default (triple-isolate: hosts first, then flows within each host; the
#: kernel here has no sch_cake to measure) and fairness between flows alone.
S7_RULES = {"triple-isolate": _s7_rule([1 / len(S7_HOSTS)] * len(S7_HOSTS)),
            "per-flow": _s7_rule([n / sum(S7_HOSTS) for n in S7_HOSTS])}


def _agent_env():
    env = dict(os.environ)
    hdl = str(HDL_DIR)
    env["PYTHONPATH"] = os.pathsep.join([hdl] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def run_one(sc, variant_name, *, binary=None, log=None, seed=1):
    """Run one scenario instance with one variant; returns its row (a dict)."""
    variant = VARIANTS[variant_name]
    if binary is None:
        binary = build_bridge(variant.elab())
    row = {"scenario": sc.name, "variant": variant_name, "uplink_bps": sc.uplink_bps, "cc": sc.cc,
           "downlink_bps": sc.downlink_bps, "rtt_ms": round(sc.rtt_s * 1e3),
           "flows": sc.flows or (len(sc.downloads) or None),
           "forward_goodput_bps": None, "reverse_goodput_bps": None, "jain": None,
           "page_time_s": None, "valid": False, "invalid_reason": "",
           "default": variant_name == default_variant(), "cake": cake_text(sc.name, sc.uplink_bps, sc.flows)}
    work = Path(tempfile.mkdtemp(prefix="ackfilter-exp-"))
    link = sc.link(variant)
    link.seed = seed
    env = _agent_env()
    try:
        csr = variant.csr(sc.uplink_bps, sc.downlink_bps, sc.rtt_s)
        with Testbed(link, csr, binary=binary, ecn=variant.ecn, log=log) as tb:
            srv_out, cl_out, spec = work / "server.json", work / "client.json", work / "spec.json"
            srv = tb.popen("server", [sys.executable, "-m", "ackfilter.sim.net.agent", "server",
                                      "--addr", SERVER_IP, "--port", str(PORT), "--out", str(srv_out),
                                      "--cc", sc.cc],
                           env=env, stdout=subprocess.PIPE, text=True)
            if srv.stdout.readline().strip() != "listening":
                raise TestbedError("the server agent did not start")
            t0 = time.monotonic() + LEAD_S
            spec.write_text(json.dumps(sc.jobs(t0)))
            cl = tb.popen("client", [sys.executable, "-m", "ackfilter.sim.net.agent", "client",
                                     "--spec", str(spec), "--out", str(cl_out), "--cc", sc.cc], env=env)
            try:
                cl.wait(timeout=LEAD_S + sc.timeout_s())
            except subprocess.TimeoutExpired:
                cl.terminate()                   # it writes what it has
                cl.wait(10)
                if not sc.page:
                    row["invalid_reason"] = f"the client did not finish within {sc.timeout_s():.0f} s"
            t_stop = time.monotonic()
            srv.terminate()
            srv.wait(10)
        stats = tb.stats
        client = json.loads(cl_out.read_text())["jobs"] if cl_out.exists() else []
        server = json.loads(srv_out.read_text())["connections"] if srv_out.exists() else {}
    finally:
        for f in work.iterdir():
            f.unlink()
        work.rmdir()

    reasons = [row["invalid_reason"]] if row["invalid_reason"] else []
    errors = [j["error"] for j in client if j and "error" in j]
    if errors:
        reasons.append("; ".join(sorted(set(errors))))
    if stats is None:
        reasons.append("the bridge gave no figures")
    elif not stats.valid:
        reasons.append(stats.invalid_reason())
    downs = [j for j in client if j and j.get("kind") == "download" and "error" not in j]
    if sc.window and sc.downloads:
        per_flow = [_goodput(j, t0, sc.window) for j in downs]
        row["flow_goodputs_bps"] = [round(x) for x in per_flow]
        row["forward_goodput_bps"] = round(sum(per_flow))
        if len(sc.downloads) > 1:
            row["jain"] = round(jain(per_flow), 4) if jain(per_flow) is not None else None
    pages = [j for j in client if j and j.get("kind") == "page" and "error" not in j]
    # What the uplink lost of the client's own segments, per the client's
    # TCP (tcpi_total_retrans): the page's SYNs and requests, the upload's data.
    up_jobs = [j for j in client if j and j.get("kind") == "upload" and "error" not in j]
    row["page_retrans"] = pages[0].get("retrans") if pages else None
    row["upload_retrans"] = up_jobs[0].get("retrans") if up_jobs else None
    if pages:
        times = pages[0]["page_times"]
        row["page_times_s"] = [round(t, 3) for t in times]
        if pages[0].get("incomplete"):
            # A page did not load before the client was stopped: the page time is
            # more than the time from its start to the stop.
            row["page_incomplete"] = True
            row["page_time_over_s"] = round(t_stop - pages[0]["started"], 1)
            row["page_time_s"] = None
        else:
            row["page_time_s"] = round(statistics.median(times), 3)
    if sc.host_uploads:
        # Per upload and per host over the window, from what the server
        # received of each connection (its peer address is its host).
        ups = [c for c in server.values() if c["kind"] == "upload"]
        per_flow, per_host = host_goodputs(ups, t0, sc.window, sc.host_uploads)
        row["uploads_seen"] = len(ups)
        row["flow_goodputs_bps"] = [round(x) for x in per_flow]
        row["host_goodputs_bps"] = [round(x) for x in per_host]
        row["reverse_goodput_bps"] = round(sum(per_flow))
        row["jain"] = round(jain(per_flow), 4) if jain(per_flow) is not None else None
        row["host_jain"] = round(jain(per_host), 4) if jain(per_host) is not None else None
    if sc.upload:
        ups = [c for c in server.values() if c["kind"] == "upload"]
        if sc.window:
            win = sc.window
        elif pages:
            spans = pages[0]["spans"]
            first = spans[0][0] if spans else pages[0].get("started")
            last = t_stop if pages[0].get("incomplete") else spans[-1][1]
            win = (first - t0, last - t0)
        else:
            win = None
        row["reverse_goodput_bps"] = round(_goodput(ups[0], t0, win)) if ups and win else 0
        if sc.page and ups:
            # The upload's own rate outside the page: the 5 s before it starts,
            # as the receiver delivered it in order, and as the uplink carried
            # it (every frame but the pure ACKs is the upload's then).
            pre = (max(sc.upload[0], sc.page["start"] - 5), sc.page["start"])
            row["upload_before_page_bps"] = round(_goodput(ups[0], t0, pre))
            if stats is not None and "start_mono_s" in stats.values:
                link = series_rate(stats.values.get("up_series") or [], stats.values["start_mono_s"],
                                   t0 + pre[0], t0 + pre[1])
                row["upload_link_before_page_bps"] = None if link is None else round(link)
    probes = [j for j in client if j and j.get("kind") == "probe" and "error" not in j]
    if sc.probe:
        row["probe"] = None
        if probes:
            if sc.window:
                win = (t0 + sc.window[0], t0 + sc.window[1])
            elif pages and pages[0]["spans"]:
                spans = pages[0]["spans"]
                win = (spans[0][0], t_stop if pages[0].get("incomplete") else spans[-1][1])
            else:
                win = None
            idle = (t0 + sc.probe[0] + PROBE_SETTLE_S, t0 + sc.load_start)
            row["probe"] = probe_figures(probes[0]["samples"], idle, win) if win else None
        if row["probe"] is None:
            reasons.append("the probe gave no figures (no idle echo, or no probe in the window)")
    if stats is not None:
        row["max_lag_ms"] = round(stats.max_lag_s * 1e3, 3)
        row["simulated_cycles_per_s"] = round(stats["ticks"] / stats["run_s"]) if stats["run_s"] else None
        # What the uplink carried per second (from the bridge's start, about LEAD_S + 0.1 s
        # before the first job): pure ACKs, other frames and their bytes.
        row["uplink_per_second"] = stats.values.get("up_series")
        # Validity (bridge.validity_bounds): how late frames were written, against
        # the bounds of this link, and where the bridge's time went.
        row["max_late_ms"] = round(stats.max_late_s * 1e3, 3)
        row["late_share"] = round(stats.late_share(), 5)
        row["validity_bounds"] = {"max_late_ms": round(stats.bounds.max_late_s * 1e3, 3),
                                  "late_ms": round(stats.bounds.late_s * 1e3, 3),
                                  "late_share": stats.bounds.late_share}
        row["bridge_timing_ms"] = {k: round(stats.values.get(f"max_{k}_ms", 0.0), 3)
                                   for k in ("oversleep", "batch", "read", "write")}
        row["downlink_drops"] = stats["down_drops"]
        row["downlink_lost"] = stats["down_lost"]
        row["modem_fifo_drops"] = stats["up_drops"] if variant.uplink == "fifo" else None
        if variant.uplink == "core":
            row["counters"] = {k: stats.counters[k] for k in (
                "acks_in", "acks_superseded", "acks_ineligible", "frames_out", "drop_data_full",
                "drop_ack_front", "drop_ack_covered", "red_marked", "red_ce_already", "drop_red",
                "seg_frames", "seg_chunks", "acc_escalated", "acc_marked", "drop_data_overflow")}
    row["valid"] = not reasons
    row["invalid_reason"] = "; ".join(reasons)
    return row
