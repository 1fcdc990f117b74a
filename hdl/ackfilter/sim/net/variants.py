"""The variants of the core the experiments compare: the registers each
sets (filter mode, data share, flow queues, RED, the segmenter, ACC), which
build of the core it needs, and which is the core's reset values."""

import json
import os
import subprocess
import sys
from dataclasses import dataclass

from ... import params
from ...model.red import registers_for_rate
from ...paths import REPO_ROOT

__all__ = ["Variant", "VARIANTS", "tune_registers", "default_variant"]


@dataclass(frozen=True)
class Variant:
    name: str
    doc: str
    uplink: str = "core"            # "core" or "fifo" (the modem's own 10-packet FIFO, no core)
    ack_mode: str = None
    data_share: int = None
    red: bool = False               # RED on, set for the uplink rate (model.red.registers_for_rate;
                                    # for a tuned variant: `tune --red`)
    ecn: int = 0                    # the hosts' net.ipv4.tcp_ecn (1: request ECN)
    chunk: int = 0                  # the segmenter's chunk_bytes (0: off)
    acc: bool = False               # ACC on (spec section 11), at its default threshold
    flow_queues: bool = False       # the core built with per-flow data queues (spec section 12),
                                    # else with one data FIFO (the board's is params.FLOW_QUEUES)
    host_buckets: int = 0           # with flow_queues: host fairness's buckets, 0: flows only
                                    # (the board's is params.HOST_BUCKETS)
    tuned: bool = False             # every register `ackfilter-ctl tune` prints for the link,
                                    # the rest at its reset value (the other fields unused)
    link: str = "raw"               # for a tuned variant: `tune --link` (raw: the frame as stored,
                                    # what the simulated links charge)

    def elab(self):
        """The core's build options for this variant: which data path and
        whether hosts count, always said (the variants' names mean the same
        core whatever the default); ``None`` (the board's) for the modem's
        FIFO, which runs no core."""
        if self.uplink != "core":
            return None
        if not self.flow_queues:
            return {"flow_queues": 0}
        return {"flow_queues": 1, "host_buckets": self.host_buckets}

    def csr(self, uplink_bps, downlink_bps=10_000_000, rtt_s=0.05):
        """The core's registers for this variant on an uplink of ``uplink_bps``.

        The shaper *is* the modem's link here: its rate, no burst (a frame
        starts when the one before it has left), and each frame charged its
        length as stored, as the bridge's links and tc-cake's default charge
        it. A ``tuned`` variant instead takes what ``ackfilter-ctl tune``
        prints for the link (:func:`tune_registers`): a shaper at 95 % of the
        uplink charging the variant's link type (``raw``, as the simulated
        links charge, for ``tuned``), as a user who follows the tool has."""
        if self.uplink != "core":
            return {}
        if self.tuned:
            return tune_registers(uplink_bps, downlink_bps, rtt_s, link=self.link, red=self.red)
        red = registers_for_rate(uplink_bps) if self.red else {}
        return {"ack_mode": self.ack_mode, "data_share": self.data_share,
                "shaper_cpb_q16": params.cpb_q16_for_rate(uplink_bps),
                "shaper_burst_bytes": 0, "shaper_overhead_bytes": 0, "shaper_charge_base": 0,
                "chunk_bytes": self.chunk, **red, **({"acc_enable": 1} if self.acc else {})}


def _variants():
    v = [Variant("modem-fifo", "no ackfilter: the modem's own FIFO of 10 packets", uplink="fifo"),
         Variant("off", "ackfilter with the filter off: one FIFO, its data buffer (128 cells of "
                 "256 bytes: at most 128 frames, ACKs included)",
                 ack_mode="off", data_share=128),
         Variant("conservative", "conservative supersession, data share 128",
                 ack_mode="conservative", data_share=128),
         Variant("aggressive", "aggressive supersession, data share 128",
                 ack_mode="aggressive", data_share=128)]
    v += [Variant("aggressive-red", "aggressive, data share 128, RED on the data queue (drops: the "
                  "hosts do not use ECN)", ack_mode="aggressive", data_share=128, red=True),
          Variant("aggressive-red-ecn", "aggressive, data share 128, RED marking CE (the hosts "
                  "request classic ECN, tcp_ecn=1)", ack_mode="aggressive", data_share=128, red=True,
                  ecn=1)]
    # The segmenter (spec section 9): upload data in chunks, so that an ACK
    # waits behind a chunk, not a whole frame (Lakshman, Madhow and Suter).
    for chunk in (256, 512):
        v.append(Variant(f"aggressive-seg{chunk}", f"aggressive, data share 128, upload data cut "
                         f"into {chunk}-byte chunks", ack_mode="aggressive", data_share=128,
                         chunk=chunk))
    v.append(Variant("aggressive-seg512-red-ecn", "aggressive, data share 128, 512-byte chunks, "
                     "RED marking CE (the hosts request classic ECN)", ack_mode="aggressive",
                     data_share=128, red=True, ecn=1, chunk=512))
    # ACC (spec section 11): conservative until the ACK queue's average
    # passes the threshold, then aggressive.
    v.append(Variant("conservative-acc", "conservative, data share 128, ACC on (aggressive while "
                     "the ACK queue's average is above 16)", ack_mode="conservative", data_share=128,
                     acc=True))
    # Flow queues (spec section 12): upload data in per-flow queues, served
    # by deficit round robin with new (sparse) flows first; a build option
    # of the core, so these variants run their own bridge; with the board's
    # host fairness (section 12, "Hosts"), but for -flows.
    hb = params.HOST_BUCKETS
    v.append(Variant("aggressive-fq", "aggressive, data share 128, upload data in per-flow queues "
                     "(deficit round robin, sparse flows first, hosts first)", ack_mode="aggressive",
                     data_share=128, flow_queues=True, host_buckets=hb))
    v.append(Variant("aggressive-fq-flows", "aggressive, data share 128, per-flow queues shared by "
                     "flows only (no host fairness)", ack_mode="aggressive", data_share=128,
                     flow_queues=True))
    for chunk in (256, 512):
        v.append(Variant(f"aggressive-fq-seg{chunk}", f"aggressive, data share 128, per-flow queues, "
                         f"upload data cut into {chunk}-byte chunks", ack_mode="aggressive",
                         data_share=128, chunk=chunk, flow_queues=True, host_buckets=hb))
    v.append(Variant("aggressive-fq-red-ecn", "aggressive, data share 128, per-flow queues, RED "
                     "marking CE (the hosts request classic ECN)", ack_mode="aggressive", data_share=128,
                     red=True, ecn=1, flow_queues=True, host_buckets=hb))
    v.append(Variant("aggressive-fq-red", "aggressive, data share 128, per-flow queues, RED "
                     "dropping (the hosts do not request ECN, Linux's default)",
                     ack_mode="aggressive", data_share=128, red=True, flow_queues=True, host_buckets=hb))
    # What `ackfilter-ctl tune` advises for each scenario's link, applied as
    # it prints it: the tool's advice, measured.
    board = dict(tuned=True, flow_queues=params.FLOW_QUEUES,
                 host_buckets=params.HOST_BUCKETS if params.FLOW_QUEUES else 0)
    v.append(Variant("tuned", "every register `ackfilter-ctl tune --link raw` prints for the "
                     "scenario's link (rates, RTT, the frame charged as stored, as the simulated "
                     "link charges it), the rest at reset; the board's core", **board))
    v.append(Variant("tuned-ethernet", "what `tune --link ethernet` prints (the Ethernet wire's 38 "
                     "bytes a frame charged, which the simulated link does not charge)",
                     link="ethernet", **board))
    v.append(Variant("tuned-red", "what `tune --link ethernet --red` prints (the advice with RED "
                     "on, as it was before the runs turned RED off)", link="ethernet", red=True,
                     **board))
    for mode in ("conservative", "aggressive"):
        for share in (0, 64, 192):
            v.append(Variant(f"{mode}-share{share}", f"{mode} supersession, data share {share}",
                             ack_mode=mode, data_share=share))
    return {x.name: x for x in v}


VARIANTS = _variants()


def tune_registers(uplink_bps, downlink_bps, rtt_s, link="ethernet", red=False):
    """What ``ackfilter-ctl --json tune --up U --down D --rtt R --link LINK``
    (with ``--red`` if ``red``) prints, run as a user runs it (the host tool
    from ``host-tools/``): ``{register: value}``."""
    cmd = [sys.executable, "-c", "import sys; from ackfilter_ctl.cli import main; sys.exit(main())",
           "--json", "tune", "--up", str(int(uplink_bps)), "--down", str(int(downlink_bps)),
           "--rtt", f"{rtt_s * 1e3:g}", "--link", link] + (["--red"] if red else [])
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "host-tools"))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise ValueError(f"ackfilter-ctl tune failed ({proc.returncode}): {proc.stderr.strip()}")
    return dict(json.loads(proc.stdout)["registers"])


def default_variant():
    """The variant the core's reset values and the board's build select
    (what the board ships with: RED, the segmenter and ACC off)."""
    mode = params.default_name("ack_mode")
    share = params.param("data_share").default
    for v in VARIANTS.values():
        if (v.uplink == "core" and v.ack_mode == mode and v.data_share == share
                and v.flow_queues == params.FLOW_QUEUES and not (v.red or v.chunk or v.acc)
                and v.host_buckets == (params.HOST_BUCKETS if v.flow_queues else 0)):
            return v.name
    raise LookupError(f"no variant for the defaults ack_mode={mode} data_share={share} "
                      f"flow_queues={params.FLOW_QUEUES}")
