"""The scenarios (the research's S1-S7 and today's links, LU/LD/LB/LP),
the CAKE anchors beside them, and the plans of runs (quick, full, by name).

The CAKE anchor numbers were measured with Linux 6.1 ``sch_cake`` under the
same settings (CUBIC, 25 ms each way, downlink 10 Mb/s with a 10-packet
FIFO, offloads off, SACK and timestamps on)."""

from dataclasses import dataclass

from .bridge import FULL_FRAME_BYTES, Link
from .testbed import CLIENT_IPS, SERVER_IP
from .variants import VARIANTS, default_variant

__all__ = ["CAKE", "cake_text", "Scenario", "scenarios", "SCENARIOS", "plan", "grade", "GRADES",
           "modem_buffer_packets", "PORT", "LEAD_S"]

PORT = 5001
#: Seconds between starting the agents and the first job.
LEAD_S = 1.0

CAKE = {
    ("S1", 28800): {"fifo": 2696, "cake": 3467, "cake-aggressive": 3823},
    ("S1", 64000): {"fifo": 6156, "cake": 6845, "cake-aggressive": 7556},
    ("S1", 128000): {"fifo": 6980, "cake": 8382, "cake-aggressive": 8779},
    ("S1", 256000): {"fifo": 8413, "cake": 8548, "cake-aggressive": 8440},
    ("S2", 64000): {"fifo": 5747, "fifo_jain": 0.735, "cake-aggressive": 6914,
                    "cake-aggressive_jain": 0.999},
    ("S3", 64000): {"fifo": (5533, 0), "cake": (719, 52)},
    ("S3", 256000): {"fifo": (2043, 192), "cake": (2693, 200)},
    ("S4", 64000): {"fifo_jain_at_12": 0.51, "cake_kbps": (6000, 7100), "cake_jain_min": 0.99},
    ("S5", 28800): {"cake_page_s": (1.24, 1.43)},
    ("S5U", 28800): {"fifo_page_s": (22, 24), "cake_page_s": (1.7, 3.6)},
}


def cake_text(scenario, uplink_bps, flows=None):
    """The CAKE anchor of a row, as a short text ('' when there is none)."""
    a = CAKE.get((scenario, uplink_bps))
    if not a:
        return ""
    if scenario == "S1":
        return f"FIFO {a['fifo']} / CAKE {a['cake']} / aggr. {a['cake-aggressive']}"
    if scenario == "S2":
        return (f"FIFO {a['fifo']} (Jain {a['fifo_jain']}) / aggr. {a['cake-aggressive']} "
                f"(Jain {a['cake-aggressive_jain']})")
    if scenario == "S3":
        return f"FIFO {a['fifo'][0]} / {a['fifo'][1]}; CAKE {a['cake'][0]} / {a['cake'][1]}"
    if scenario == "S4":
        if flows == 12:
            return f"FIFO Jain {a['fifo_jain_at_12']}; CAKE {a['cake_kbps'][0]}-{a['cake_kbps'][1]}, Jain >= 0.99"
        return f"CAKE {a['cake_kbps'][0]}-{a['cake_kbps'][1]}, Jain >= 0.99"
    if scenario == "S5":
        return f"CAKE {a['cake_page_s'][0]}-{a['cake_page_s'][1]} s"
    if scenario == "S5U":
        return (f"FIFO {a['fifo_page_s'][0]}-{a['fifo_page_s'][1]} s; "
                f"CAKE {a['cake_page_s'][0]}-{a['cake_page_s'][1]} s")
    return ""


# --- scenarios ---------------------------------------------------------------------

#: Wu & Williamson's page: the document, then its three objects in parallel.
PAGE_DOCUMENT = 29058
PAGE_OBJECTS = (7097, 13329, 13329)
#: The lossy downlink of S6: Gilbert-Elliott, mean bad state 5 ms (0.1 RTT),
#: 1 % of the time bad (mean good state 495 ms), every packet lost while bad,
#: none while good (the packet-size study's pg = 0, pb = 1).
S6_GE = (0.495, 0.005, 0.0, 1.0)


@dataclass
class Scenario:
    """One configuration of links and jobs (times in seconds from the first job)."""
    name: str
    uplink_bps: int
    downlink_bps: int = 10_000_000
    downloads: tuple = ()            # (start, end) per download
    upload: tuple = None             # (start, end) or (start, None): until the pages end
    page: dict = None                # {"start": s, "repeat": n, "gap": s}
    window: tuple = None             # goodput window (start, end)
    ge: tuple = None
    duration: float = 0.0
    flows: int = None
    cc: str = "cubic"                # congestion control of both ends (per socket)
    #: Uploads per LAN host for the whole run (host k connects from
    #: testbed.CLIENT_IPS[k]): S7's two hosts, (1, 4).
    host_uploads: tuple = None
    rtt_s: float = 0.050             # base round-trip time, half of it each way
    up_queue: int = 10               # the modem's own uplink FIFO (packets; modem-fifo only)
    down_queue: int = 10             # the downlink's FIFO (packets)
    #: The latency probe (start, end), or None: a UDP echo PROBE_HZ times a
    #: second; before the first load it measures the idle round trip.
    probe: tuple = None

    def link(self, variant):
        half = self.rtt_s / 2
        return Link(up_rate_bps=self.uplink_bps, down_rate_bps=self.downlink_bps,
                    uplink=variant.uplink, up_queue=self.up_queue, down_queue=self.down_queue,
                    ge=self.ge, up_delay_s=half, down_delay_s=half)

    @property
    def load_start(self):
        """When the first load starts (s from the first job)."""
        starts = [a for a, _ in self.downloads] + ([self.upload[0]] if self.upload else [])
        starts += [self.page["start"]] if self.page else []
        return min(starts) if starts else 0.0

    def jobs(self, t0):
        jobs = []
        for a, b in self.downloads:
            jobs.append({"kind": "download", "addr": SERVER_IP, "port": PORT, "start": t0 + a,
                         "duration": b - a})
        if self.page:
            jobs.append({"kind": "page", "addr": SERVER_IP, "port": PORT, "start": t0 + self.page["start"],
                         "document": PAGE_DOCUMENT, "objects": list(PAGE_OBJECTS),
                         "repeat": self.page["repeat"], "gap": self.page["gap"]})
        if self.upload:
            a, b = self.upload
            job = {"kind": "upload", "addr": SERVER_IP, "port": PORT, "start": t0 + a,
                   "duration": (b - a) if b is not None else 300.0}
            if b is None:
                job["stop_with"] = len(jobs) - 1          # the page job
            jobs.append(job)
        for host, n in enumerate(self.host_uploads or ()):
            jobs += [{"kind": "upload", "addr": SERVER_IP, "port": PORT, "start": t0,
                      "duration": self.duration, "src": CLIENT_IPS[host]} for _ in range(n)]
        if self.probe:
            a, b = self.probe
            job = {"kind": "probe", "addr": SERVER_IP, "port": PORT, "start": t0 + a, "hz": PROBE_HZ,
                   "duration": (b - a) if b is not None else 300.0}
            if b is None:
                job["stop_with"] = next(i for i, j in enumerate(jobs) if j["kind"] == "page")
            jobs.append(job)
        return jobs

    def timeout_s(self):
        """When the client is stopped. A page not loaded by then is a result
        (``page_incomplete``), not a failed run."""
        return self.duration + (60 if self.page else 30)


# Today's links: latency under load. Each run starts with the probe alone
# (the idle round trip), then the load; goodput and the probe's added round
# trip are taken over the same window, after the load's first seconds.

#: (uplink, downlink) bit/s: ADSL, and cable or fibre.
MODERN_LINKS = ((1_000_000, 16_000_000), (10_000_000, 100_000_000))
#: Base round-trip times, s.
MODERN_RTTS = (0.020, 0.050)
#: The unmanaged queues of these links (the modem's own uplink FIFO in
#: ``modem-fifo``, the ISP's downlink queue) hold this long at their rate.
MODEM_BUFFER_S = 0.100
#: The probe: datagrams a second.
PROBE_HZ = 20
#: The idle round trip is taken from this long after the probe starts.
PROBE_SETTLE_S = 0.5
L_IDLE_S = 3.0                      # the probe alone
L_LOAD_S = 15.0                     # then the load
L_WARM_S = 6.0                      # measured from this long into the load
#: The latency-under-load scenarios: the load beside the probe.
L_LOADS = {"LU": "a bulk upload", "LD": "a bulk download", "LB": "a bulk download and a bulk upload",
           "LP": "Wu & Williamson's page, three times, during a bulk upload"}
#: The bufferbloat grades of the public latency tests, by the added round
#: trip (the median over the window): (upper bound ms, grade), then F.
GRADES = ((5, "A+"), (30, "A"), (60, "B"), (200, "C"), (400, "D"))


def modem_buffer_packets(rate_bps):
    """An unmanaged queue of :data:`MODEM_BUFFER_S` at ``rate_bps``, in full
    frames, at least 10 (the research's FIFO)."""
    return max(10, round(rate_bps * MODEM_BUFFER_S / (8 * FULL_FRAME_BYTES)))


def grade(added_ms):
    """The bufferbloat grade of an added round trip (ms); ``None`` for none."""
    if added_ms is None:
        return None
    return next((g for bound, g in GRADES if added_ms < bound), "F")


def _l(name, up, down, rtt):
    end = L_IDLE_S + L_LOAD_S
    window = (L_IDLE_S + L_WARM_S, end)
    common = dict(downlink_bps=down, rtt_s=rtt, up_queue=modem_buffer_packets(up),
                  down_queue=modem_buffer_packets(down))
    if name == "LU":
        return Scenario(name, up, upload=(L_IDLE_S, end), window=window, duration=end,
                        probe=(0, end), **common)
    if name == "LD":
        return Scenario(name, up, downloads=((L_IDLE_S, end),), window=window, duration=end,
                        probe=(0, end), **common)
    if name == "LB":
        return Scenario(name, up, downloads=((L_IDLE_S, end),), upload=(L_IDLE_S, end), window=window,
                        duration=end, probe=(0, end), **common)
    # LP: the upload from L_IDLE_S until the pages are done, the pages from
    # L_WARM_S into it; the window is the pages' span.
    return Scenario(name, up, upload=(L_IDLE_S, None), duration=L_IDLE_S + L_WARM_S, probe=(0, None),
                    page={"start": L_IDLE_S + L_WARM_S, "repeat": 3, "gap": 1.0}, **common)


def _s1(up, seconds=30, warm=10, ge=None, name="S1", cc="cubic"):
    return Scenario(name, up, downloads=((0, seconds),), window=(warm, seconds), duration=seconds, ge=ge,
                    cc=cc)


def scenarios(which, *, quick=False):
    """The scenario instances of one scenario name."""
    if which == "S1":
        return [_s1(up) for up in ((28800, 64000) if quick else (28800, 64000, 128000, 256000))]
    if which == "S2":
        return [Scenario("S2", 64000, downloads=((0, 38), (8, 38)), window=(13, 38), duration=38, flows=2)]
    if which == "S3":
        return [Scenario("S3", up, downloads=((0, 38),), upload=(8, 38), window=(13, 38), duration=38)
                for up in ((64000,) if quick else (64000, 256000))]
    if which == "S4":
        return [Scenario("S4", 64000, downloads=((0, 30),) * n, window=(10, 30), duration=30, flows=n)
                for n in (1, 2, 4, 8, 12)]
    if which == "S5":
        return [Scenario("S5", up, downlink_bps=1_500_000, page={"start": 0, "repeat": 5, "gap": 1.0},
                         duration=15) for up in ((28800,) if quick else (28800, 56000))]
    if which == "S5U":
        return [Scenario("S5U", up, downlink_bps=1_500_000, upload=(0, None),
                         page={"start": 10, "repeat": 1, "gap": 1.0}, duration=10)
                for up in (28800, 56000)]
    if which == "S6":
        return [_s1(64000, ge=S6_GE, name="S6")]
    if which == "S1R":
        return [_s1(up, name="S1R", cc="reno") for up in (28800, 64000)]
    if which == "S7":
        return [Scenario("S7", up, host_uploads=S7_HOSTS, window=(10, 30), duration=30,
                         flows=sum(S7_HOSTS)) for up in (64000, 1_000_000)]
    if which in L_LOADS:
        if quick:
            return [_l(which, *MODERN_LINKS[0], MODERN_RTTS[-1])]
        return [_l(which, up, down, rtt) for up, down in MODERN_LINKS for rtt in MODERN_RTTS]
    raise ValueError(f"unknown scenario {which!r}; known: {' '.join(SCENARIOS)}")


#: S1R: S1 with Reno at both ends, the research's TCP (Balakrishnan et al. used Reno).
#: S7: uploads from two LAN hosts, one with one upload and one with four.
SCENARIOS = ("S1", "S3", "S5", "S5U", "LU", "LD", "LB", "LP", "S2", "S4", "S6", "S1R", "S7")
#: S7's uploads per host.
S7_HOSTS = (1, 4)

_BASE = ("modem-fifo", "off", "conservative", "aggressive")
_SHARES = tuple(n for n in VARIANTS if "-share" in n)
_RED = tuple(n for n in VARIANTS
             if VARIANTS[n].red and not VARIANTS[n].chunk and not VARIANTS[n].flow_queues)
_SEG = tuple(n for n in VARIANTS if VARIANTS[n].chunk and not VARIANTS[n].flow_queues)
_ACC = tuple(n for n in VARIANTS if VARIANTS[n].acc)
_FQ = tuple(n for n in VARIANTS if VARIANTS[n].flow_queues and VARIANTS[n].host_buckets
            and not VARIANTS[n].tuned)
#: Flow queues without host fairness: where hosts differ (S7).
_FQ_FLOWS = tuple(n for n in VARIANTS if VARIANTS[n].flow_queues and not VARIANTS[n].host_buckets)
#: Where RED is measured: a queue of upload data builds in these.
_RED_SCENARIOS = ("S1", "S3", "S5U")
#: Today's links: what a user has (the modem's FIFO), the candidates for the
#: defaults, and what `ackfilter-ctl tune` advises.
_L_VARIANTS = ("modem-fifo", "aggressive-fq", "aggressive-fq-red-ecn", "aggressive-fq-seg512", "tuned")


def plan(*, quick=False, only=None, variants=None):
    """``[(scenario, variant name), ...]`` in run order."""
    default = default_variant()
    out = []
    names = only or (("S1", "S3", "S5", "LB") if quick else SCENARIOS)
    for name in names:
        if variants:
            vs = tuple(variants)
        elif quick:
            vs = (default,) if name in L_LOADS else ("modem-fifo", default)
        elif name in L_LOADS:
            vs = _L_VARIANTS + (default,)
        elif name == "S3":
            vs = _BASE + _SHARES + _RED + _SEG + _ACC + _FQ + ("tuned",)
        elif name == "S7":
            vs = ("modem-fifo", default) + _FQ + _FQ_FLOWS
        elif name in _RED_SCENARIOS:
            vs = _BASE + (default,) + _RED + _SEG + _ACC + _FQ + ("tuned",)
        else:
            vs = _BASE + (default,) + (("tuned",) if name == "S5" else ())
        vs = tuple(dict.fromkeys(vs))     # once each, in order (the default may be among them)
        for sc in scenarios(name, quick=quick):
            extra = ("off",) if quick and not variants and name == "S1" and sc.uplink_bps == 64000 else ()
            for v in vs + extra:
                if v not in VARIANTS:
                    raise ValueError(f"unknown variant {v!r}; known: {', '.join(VARIANTS)}")
                out.append((sc, v))
    return out
