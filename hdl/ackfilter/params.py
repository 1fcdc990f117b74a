"""The one table of the core's facts: clock, sizes, events, parameters, counters.

The gateware (:mod:`ackfilter.gateware`), the golden model, the replay
harness, the host tool and the docs all read this module; nothing else spells
an address, a size default or an event number. The C header and the JSON
register map are generated from it (:mod:`ackfilter.regmap`).

Registers are 32 bits wide on a word-addressed bus. Counters are 64 bits,
split in a low word (address ``2k``) and a high word (``2k + 1``); reading the
low word latches the high word, so reading low then high is atomic.
"""

import math
from dataclasses import dataclass

from .units import format_rate

__all__ = [
    "FIRMWARE_PARAMS", "OVERFLOW_BATCH", "FW_PARAM_KEY_BASE", "F_SYS_HZ", "ACK_SLOTS", "FLOW_ENTRIES", "DATA_BUFFER_BYTES",
    "DATA_CELL_BYTES", "DATA_CELLS", "DATA_CELL_RESERVE", "SHARED_CLASSES", "HOST_BUCKETS", "FLOW_QUEUES", "EVENTS", "ARRIVAL_EVENTS",
    "RED_DECISION_LEAD", "OVERRUN_EVENT",
    "OVERRUN_KIND", "MAX_FRAME_BYTES", "ACK_SLOT_BYTES", "ACK_FILTER_MODES", "SHAPER_CHARGE_BASES",
    "SHAPER_LINK_LAYERS", "ENUMS", "ID_VALUE", "BOARD_BASE", "BOARD_REGS", "LINK_FIELDS", "PHY_FIELDS",
    "MDIO_COMMAND_FIELDS", "MDIO_RESULT_FIELDS", "csr_last", "Param", "Counter", "PARAMS", "COUNTERS", "INFO",
    "PARAM_BASE", "INFO_BASE", "COUNTER_BASE", "param", "frames_accounted", "default_name", "counter", "cpb_q16_for_rate",
    "rate_limits_bps", "STEPS",
]

#: System clock of the core: a 32-bit word per cycle at 50 MHz is 1.6 Gb/s,
#: 1.6 times a 1 Gb/s port; a minimum frame at line rate leaves 33.6 cycles
#: for work the core needs 17 for (docs/design.md, "Clocks": why 50 and
#: not 62.5 MHz).
F_SYS_HZ = 50_000_000

#: Elaboration defaults of the uplink core (docs/design.md, "Sizes"): ACK
#: queue positions, flow table entries and the data ring in bytes (a power of
#: two). The flow queues (spec section 12) are one per flow entry and the
#: shared one: 31 entries make 32 queues, whose LUT RAMs take two 16-deep
#: banks (33 took three, and a sixth bit in every queue number).
ACK_SLOTS = 32
FLOW_ENTRIES = 31
DATA_BUFFER_BYTES = 32768
#: Upload data in per-flow queues with deficit round robin (spec section 12),
#: FLOW_ENTRIES + 1 of them; False: one data FIFO in arrival order (the core
#: before flow isolation, kept for comparison: ``flow_queues=0``).
FLOW_QUEUES = True
#: Host fairness among the flow queues (spec section 12, "Hosts"; CAKE's
#: ``dual-srchost``): a frame's host is its source address folded to one of
#: HOST_BUCKETS buckets, and a flow queue's frames cost its link charge
#: times the number of its host's bulk queues, so LAN hosts share the uplink
#: by host first. A power of two (at most 64: a bucket is 6 bits of the
#: parser's result); 0: flows share it, hosts do not count.
HOST_BUCKETS = 64

#: The data buffer in cells (docs/spec.md section 12): a frame takes
#: ceil(len / DATA_CELL_BYTES) of them, and the queue manager keeps
#: DATA_CELL_RESERVE free (one frame of MAX_FRAME_BYTES) for the frame the
#: ingress is writing next.
DATA_CELL_BYTES = 256
#: The shared data queue (flows without a flow-table entry) counts its frames
#: by the low bits of their flow tag in this many classes (spec section 12).
SHARED_CLASSES = 16
#: An overflow drops at most this many frames from the fattest queue's head
#: (spec section 12, "Buffer"; FQ-CoDel's drop_batch_size, 64 there): the
#: drops one arrival makes, one every two cycles or three, must fit between
#: minimum frames at line rate while the entry FIFO waits.
OVERFLOW_BATCH = 16

#: What the queue manager reports on its event port, by number (spec section 7).
EVENTS = (
    "ARRIVE_DATA", "ARRIVE_ACK_NEW", "ARRIVE_ACK_UNTRACKED", "ARRIVE_ACK_SUPERSEDE",
    "DROP_RUNT", "DROP_OVERSIZE", "DROP_DATA_FULL", "DROP_ACK_FRONT",
    "DEPART_ACK", "DEPART_DATA", "DROP_ACK_COVERED", "DROP_RED", "ARRIVE_DATA_MARKED",
    "DROP_DATA_OVERFLOW", "MODE_SWITCH",
)
#: The events that account for one input frame each (the others are
#: departures and the drops that make room for the arrival reported next).
ARRIVAL_EVENTS = frozenset({
    "ARRIVE_DATA", "ARRIVE_DATA_MARKED", "ARRIVE_ACK_NEW", "ARRIVE_ACK_UNTRACKED",
    "ARRIVE_ACK_SUPERSEDE", "DROP_RUNT", "DROP_OVERSIZE", "DROP_DATA_FULL", "DROP_RED",
})
#: Cycles from a data frame's RED decision to its arrival event (the decision's
#: ``now`` is the event's cycle less this; docs/spec.md section 10): the
#: latency of ``gateware.red.RedUnit``, whose event the queue manager reports
#: in the cycle the verdict comes.
RED_DECISION_LEAD = 9
#: The ingress's overrun strobe is a port of its own; traces record it as this
#: kind and name (after every queue manager event).
OVERRUN_KIND = 15
OVERRUN_EVENT = "DROP_OVERRUN"
assert len(EVENTS) <= OVERRUN_KIND

#: Frames longer than this are dropped (``drop_oversize``; spec section 2).
MAX_FRAME_BYTES = 2048
DATA_CELLS = DATA_BUFFER_BYTES // DATA_CELL_BYTES
DATA_CELL_RESERVE = -(-MAX_FRAME_BYTES // DATA_CELL_BYTES)
#: One ACK slot buffer. Every pure ACK the parser can key fits (the longest:
#: 14 + two tags 8 + PPPoE 8 + IPv4 60 + TCP 60 = 150 bytes), so a flow's
#: pure ACKs all travel the ACK queue, in order (spec section 2 rule 5).
ACK_SLOT_BYTES = 256

#: ``ack_mode`` values.
ACK_FILTER_MODES = {"off": 0, "conservative": 1, "aggressive": 2}

#: ``shaper_charge_base`` values: what a frame's charge starts from (spec section 6).
SHAPER_CHARGE_BASES = {"frame": 0, "ip": 1}

#: ``shaper_link_layer`` values, numbered as Linux numbers them
#: (include/uapi/linux/pkt_sched.h: CAKE_ATM_NONE, CAKE_ATM_ATM, CAKE_ATM_PTM).
SHAPER_LINK_LAYERS = {"none": 0, "atm": 1, "ptm": 2}

#: Parameters whose values have names.
ENUMS = {
    "ack_mode": ACK_FILTER_MODES,
    "shaper_charge_base": SHAPER_CHARGE_BASES,
    "shaper_link_layer": SHAPER_LINK_LAYERS,
}

PARAM_BASE   = 0x00
INFO_BASE    = 0x20
COUNTER_BASE = 0x40
#: Cycles from a CSR read strobe to its data (``gateware.csr``); a read strobe
#: comes at most every other cycle.
CSR_READ_LATENCY = 2


@dataclass(frozen=True)
class Param:
    """A run-time register: ``width`` bits, two's complement when ``signed``.

    A write is clamped to ``minimum..maximum`` (read as a signed 32-bit word
    when ``signed``); a read gives the value sign-extended to 32 bits. A
    value must also be a multiple of ``step``: the hardware ignores the bits
    below it, so the tools refuse a value between two steps rather than let
    it act as the step below."""
    name: str
    addr: int
    width: int
    default: int
    minimum: int
    maximum: int
    unit: str
    doc: str
    signed: bool = False
    step: int = 1

    def __post_init__(self):
        lo, hi = (-(1 << (self.width - 1)), (1 << (self.width - 1)) - 1) if self.signed \
            else (0, (1 << self.width) - 1)
        if not lo <= self.minimum <= self.default <= self.maximum <= hi:
            raise ValueError(f"parameter {self.name}: need {lo} <= minimum {self.minimum} <= default "
                             f"{self.default} <= maximum {self.maximum} <= {hi} "
                             f"({'signed' if self.signed else 'unsigned'} {self.width} bits)")
        if self.step < 1 or any(v % self.step for v in (self.minimum, self.default, self.maximum)):
            raise ValueError(f"parameter {self.name}: minimum, default and maximum must be multiples "
                             f"of the step {self.step}")

    def to_word(self, value):
        """The 32-bit bus word that writes ``value`` (two's complement if negative)."""
        return int(value) & 0xFFFF_FFFF

    def from_word(self, word):
        """The value a 32-bit bus word read from this register stands for."""
        word = int(word) & 0xFFFF_FFFF
        return word - (1 << 32) if self.signed and word >> 31 else word


@dataclass(frozen=True)
class Counter:
    name: str
    addr: int      # address of the low word; the high word is ``addr + 1``
    doc: str
    is_drop: bool = False
    inc_bits: int = 1   # width of the amount the core adds in one cycle (bytes: up to 65535)


def _params():
    rows = [
        # name                     width default  min  max          unit          (signed)
        # Default aggressive: measured best with real Linux TCP through the RTL
        # (docs/experiments.md, "Choosing the default").
        ("ack_mode",                  2,    2,     0,   2,          "enum",
         "ACK filter: 0 off (plain FIFO), 1 conservative (keeps two ACKs per flow), 2 aggressive "
         "(keeps one)"),
        ("ack_queue_limit",           8,   ACK_SLOTS,     1,   255,        "ACKs",
         "ACK queue length at which drop-from-front starts (clamped to ACK_SLOTS)"),
        ("data_share",                9,  128,     0,   256,        "1/256",
         "share of the uplink bytes guaranteed to data when ACKs are waiting "
         "(128: byte round-robin between ACKs and data, as Lakshman et al.)"),
        ("shaper_cpb_q16",           32,    0,     0,   2**32 - 1,  "cycles/byte Q16",
         "system clock cycles per byte at the uplink rate, 16 fractional bits; 0 = unshaped"),
        ("shaper_burst_bytes",       16, 1514,     0,   65535,      "bytes",
         "token bucket depth"),
        # tc-cake(8): "overhead BYTES ... values between -64 and 256 (inclusive)"
        ("shaper_overhead_bytes",    10,   24,   -64,   256,        "bytes",
         "added to each frame's charge (may be negative); the default 24 is the Ethernet "
         "wire's preamble 8 + FCS 4 + IFG 12 on the frame as stored", True),
        # tc-cake(8): "mpu BYTES ... values between 0 and 256 (inclusive)"
        ("shaper_mpu_bytes",          9,    0,     0,   256,        "bytes",
         "minimum charge of a frame after the overhead, before atm/ptm (tc-cake mpu)"),
        ("shaper_charge_base",        1,    0,     0,   1,          "enum",
         "what the charge starts from: 0 the Ethernet frame as stored (without FCS), "
         "1 its IP packet (what tc-cake's overhead keywords add to)"),
        ("shaper_link_layer",         2,    0,     0,   2,          "enum",
         "0 none, 1 atm (48-byte cells of 53 bytes), 2 ptm (+1 byte per 64 or part thereof)"),
        # RED on the data queue (docs/spec.md section 10; ackfilter.model.red).
        # Off after reset; thresholds after Floyd and Jacobson (max_th = 3 min_th,
        # w_q about 0.002) and Floyd 2000 (gentle, max_p 0.1).
        ("red_enable",                1,    0,     0,   1,          "bool",
         "RED on the data queue: 0 off (never marks or drops; the average is still kept), 1 on"),
        ("red_min_bytes",            20, 4500,     0,   2**20 - 2,  "bytes",
         "min_th: no notification while the average is below it"),
        ("red_max_bytes",            20, 13500,    1,   2**20 - 1,  "bytes",
         "max_th: the early region ends here (must be > red_min_bytes, else RED acts as off)"),
        ("red_max_p",                17, 6554,     0,   2**16,      "1/65536",
         "max_p: the notification probability p_b reaches at max_th (6554: 0.1)"),
        ("red_wq_shift",              4,    9,     1,   15,         "log2",
         "w_q = 2^-red_wq_shift, the weight of a new sample in the average"),
        ("red_gentle",                1,    1,     0,   1,          "bool",
         "0: every frame notified from max_th; 1: p_b rises from max_p to 1 up to 2*max_th"),
        # At least 1: the hardware applies one decay step per cycle and must
        # catch up with the steps that fell due during a decision.
        ("red_idle_shift",            5,   16,     1,   31,         "log2 cycles",
         "while the data queue is empty the average decays one step per 2^red_idle_shift cycles"),
        # ACK congestion control in the gateway (docs/spec.md section 11;
        # ackfilter.model.acc). Off after reset.
        ("acc_enable",                1,    0,     0,   1,          "bool",
         "ACC: above acc_threshold_acks the filter supersedes as aggressive and marks ECT ACKs CE"),
        ("acc_threshold_acks",        8,   16,     1,   255,        "ACKs",
         "ACC escalates while the ACK queue's average length is above this"),
        ("acc_wq_shift",              4,    4,     1,   15,         "log2",
         "the weight of a new sample in the ACK queue's average is 2^-acc_wq_shift"),
        # The segmenter (docs/spec.md section 9; ackfilter.model.segmenter):
        # 1456 = 91 blocks of 16, the largest below a 1500-byte MTU's 1460.
        ("chunk_bytes",              11,    0,     0,   1456,       "bytes",
         "segmenter: most TCP payload bytes in a chunk of upload data, a multiple of 16 "
         "(the low four bits are ignored); 0 = off, every frame leaves whole"),
    ]
    return tuple(Param(name, PARAM_BASE + i, w, d, lo, hi, unit, doc, *signed, step=STEPS.get(name, 1))
                 for i, (name, w, d, lo, hi, unit, doc, *signed) in enumerate(rows))


#: Parameters whose values come in steps (:attr:`Param.step`). chunk_bytes:
#: the segmenter works in checksum blocks of 16 payload bytes
#: (``model.segmenter.SEGMENT_BLOCK_BYTES``, docs/spec.md section 9) and its
#: register ignores the low four bits, so 8 would be 0 (off) and 520 would be 512.
STEPS = {"chunk_bytes": 16}


def _counters():
    rows = [
        ("frames_in",        False, "frames received from the LAN"),
        ("bytes_in",         False, "bytes received from the LAN (without FCS)"),
        ("frames_out",       False, "frames sent towards the modem"),
        ("bytes_out",        False, "bytes sent towards the modem (without FCS)"),
        ("acks_in",          False, "pure TCP ACKs received (whatever the mode)"),
        ("acks_ineligible",  False, "pure ACKs that may neither supersede nor be superseded "
                                    "(PSH/URG/AE, IP options, bad checksum, ...; they keep their order)"),
        ("acks_superseded",  False, "queued ACKs overwritten in place by a newer ACK of their flow"),
        ("cam_collisions",   False, "ACKs whose flow tag matched another flow (queued untracked)"),
        ("cam_full",         False, "ACKs queued untracked because the flow table was full"),
        ("drop_runt",        True,  "frames shorter than an Ethernet header, dropped"),
        ("drop_oversize",    True,  "frames longer than MAX_FRAME_BYTES, dropped"),
        ("drop_data_full",   True,  "data frames dropped because the data buffer was full"),
        ("drop_ack_front",   True,  "ACKs dropped from the front of a full ACK queue "
                                    "(only when no queued ACK is covered by a newer one)"),
        ("drop_ack_covered", True,  "queued ACKs dropped from a full ACK queue because a newer queued "
                                    "ACK of their flow carries their information"),
        ("drop_overrun",     True,  "frames dropped because the parser's output FIFO was full"),
        ("red_marked",       False, "data frames RED notified by CE: ECT marked CE, or CE already"),
        ("red_ce_already",   False, "of red_marked, frames that arrived CE (forwarded unchanged)"),
        ("drop_red",         True,  "data frames RED notified by a drop: Not-ECT or not IP, or any in the forced region"),
        ("acc_escalated",    False, "pure ACKs that arrived while ACC was escalated (the ACK queue's "
                                    "average above acc_threshold_acks)"),
        ("acc_marked",       False, "of acc_escalated, ECT ACKs ACC marked CE"),
        ("seg_frames",       False, "data frames the segmenter cut into chunks (each sent as seg_chunks "
                                    "frames, counted in frames_out)"),
        ("seg_chunks",       False, "chunks sent for the frames in seg_frames"),
        ("drop_data_overflow", True, "data frames dropped from the head of the fattest flow queue to make "
                                    "room for an arrival (flow queues, spec section 12)"),
    ]
    return tuple(Counter(name, COUNTER_BASE + 2 * i, doc, is_drop,
                         inc_bits=16 if name.startswith("bytes_") else 1)
                 for i, (name, is_drop, doc) in enumerate(rows))


PARAMS = _params()
COUNTERS = _counters()


@dataclass(frozen=True)
class FirmwareParam:
    """A parameter the control plane's firmware keeps (not a CSR): shown, set
    and saved like the CSR parameters, ``key`` names it in the saved record."""
    name: str
    key: int
    default: int
    minimum: int
    maximum: int
    unit: str
    doc: str


#: Keys of firmware parameters start here (CSR parameters are keyed by address).
FW_PARAM_KEY_BASE = 0x100


def _firmware_params():
    rows = [
        ("ared_enable",       1,   0,    1,     "bool",
         "Adaptive RED (Floyd, Gummadi, Shenker 2001): while red_enable is 1, every "
         "ared_interval_ms the firmware raises red_max_p when RED's average is above the middle "
         "fifth of min..max and lowers it when below"),
        ("ared_interval_ms",  500, 100,  10000, "ms",
         "how often Adaptive RED looks at the average (0.5 s in the paper)"),
    ]
    return tuple(FirmwareParam(name, FW_PARAM_KEY_BASE + i, d, lo, hi, unit, doc)
                 for i, (name, d, lo, hi, unit, doc) in enumerate(rows))


FIRMWARE_PARAMS = _firmware_params()

#: Read-only words: identification, elaboration parameters and live levels.
INFO = {
    "id":               INFO_BASE + 0,   # 0x41434B46, "ACKF"
    "ack_slots":        INFO_BASE + 1,
    "flow_entries":     INFO_BASE + 2,
    "data_buffer_bytes": INFO_BASE + 3,
    "ack_queue_depth":  INFO_BASE + 4,
    "data_queue_frames": INFO_BASE + 5,
    "flows_active":     INFO_BASE + 6,
    "red_avg_bytes":    INFO_BASE + 7,   # RED's average of the data queue, whole bytes
    "data_queues":      INFO_BASE + 8,   # per-flow data queues; 0: one data FIFO
    "host_buckets":     INFO_BASE + 9,   # host fairness's buckets; 0: flows only
}
ID_VALUE = 0x41434B46

#: The board's registers (``board/regs.py``), beside the core's on the same
#: bus from ``BOARD_BASE`` on: each port's link as its MAC sees it, the MDIO
#: poller's view of each PHY (by MDIO address), and a port to any PHY
#: register. Read-only but for ``mdio_command``.
BOARD_BASE = 0x80
BOARD_REGS = {
    "lan_link":     BOARD_BASE + 0,   # LINK_FIELDS, the LAN port
    "modem_link":   BOARD_BASE + 1,   # LINK_FIELDS, the modem port
    "phy0_status":  BOARD_BASE + 2,   # PHY_FIELDS, MDIO address 0
    "phy1_status":  BOARD_BASE + 3,   # PHY_FIELDS, MDIO address 1
    "phy0_id":      BOARD_BASE + 4,   # OUI and model (registers 2 and 3)
    "phy1_id":      BOARD_BASE + 5,
    "mdio_result":  BOARD_BASE + 6,   # MDIO_RESULT_FIELDS
    "mdio_command": BOARD_BASE + 7,   # MDIO_COMMAND_FIELDS; a write sends a frame
}
#: (name, lsb, width) of the words above.
LINK_FIELDS = (
    ("speed", 0, 2),             # what the MAC runs at: 0 10, 1 100, 2 1000 Mb/s (from RXC)
    ("rxc_ok", 2, 1),            # the PHY's RX clock ran in the last measurement
    ("inband_link", 3, 1),       # RGMII in-band status, when the PHY sends it
    ("inband_speed", 4, 2),
    ("inband_full_duplex", 6, 1),
    ("speed_changes", 8, 8),     # changes of `speed` since reset (wraps)
)
PHY_FIELDS = (                   # gateware.mdio.PHYStatus, its low 32 bits
    ("present", 0, 1), ("link", 1, 1), ("speed", 2, 2), ("full_duplex", 4, 1),
    ("an_complete", 5, 1), ("lp_1000", 6, 2), ("polls", 8, 8), ("lp_abilities", 16, 16),
)
MDIO_COMMAND_FIELDS = (("data", 0, 16), ("reg", 16, 5), ("phy", 21, 5), ("write", 26, 1))
MDIO_RESULT_FIELDS = (("data", 0, 16), ("no_phy", 16, 1), ("busy", 17, 1), ("done", 24, 8))



def csr_last():
    """The core's last word address in use (a harness that reads every register
    of the core reads 0..this; the board's registers come after)."""
    return max([p.addr for p in PARAMS] + list(INFO.values()) + [c.addr + 1 for c in COUNTERS])


def frames_accounted(c):
    """What every input frame became, from counters ``c`` (by name): sent,
    superseded or dropped. Equal to ``frames_in`` once the queues are empty
    (a frame the segmenter cut is one input frame and ``seg_chunks`` output
    frames: ``frames_out`` counts each chunk, so the chunks beyond the first
    of each cut frame are taken off)."""
    drops = sum(c[k.name] for k in COUNTERS if k.is_drop)
    return c["frames_out"] - (c["seg_chunks"] - c["seg_frames"]) + c["acks_superseded"] + drops


def param(name):
    for p in PARAMS:
        if p.name == name:
            return p
    raise KeyError(f"no parameter named {name!r}; known: {', '.join(p.name for p in PARAMS)}")


def default_name(name):
    """The name of the default value of the enum parameter ``name``
    (``default_name("ack_mode")`` is the filter mode the core resets to)."""
    values = {v: k for k, v in ENUMS[name].items()}
    return values[param(name).default]


def counter(name):
    for c in COUNTERS:
        if c.name == name:
            return c
    raise KeyError(f"no counter named {name!r}; known: {', '.join(c.name for c in COUNTERS)}")


def rate_limits_bps(f_sys_hz=F_SYS_HZ):
    """``(lowest, highest)`` shaped rate in bit/s: ``shaper_cpb_q16`` (cycles per
    byte, Q16) must be 1 .. 2**32 - 1."""
    top = 8 * f_sys_hz * 65536
    return -(-top // (2**32 - 1)), top


def cpb_q16_for_rate(rate_bps, f_sys_hz=F_SYS_HZ):
    """``shaper_cpb_q16`` for an uplink of ``rate_bps`` bit/s.

    Exactly 0 means unshaped. Anything else must be a finite number within
    :func:`rate_limits_bps`; a ``ValueError`` names the value and that range
    (a ``TypeError`` a value that is not a number)."""
    if isinstance(rate_bps, bool) or not isinstance(rate_bps, (int, float)):
        raise TypeError(f"rate must be a number of bit/s, not {rate_bps!r}")
    if rate_bps == 0:
        return 0
    lo, hi = rate_limits_bps(f_sys_hz)
    if not lo <= rate_bps <= hi:      # also false for NaN
        what = ("is not a finite number" if isinstance(rate_bps, float) and not math.isfinite(rate_bps)
                else "is negative" if rate_bps < 0
                else "is more than the shaper can express" if rate_bps > hi
                else "is less than the shaper can express")
        shown = f"{rate_bps!r}" if isinstance(rate_bps, float) or rate_bps < 10**18 \
            else f"about 10^{len(str(rate_bps)) - 1}"
        raise ValueError(f"rate {shown} bit/s {what}: a shaped rate must be {lo} .. {hi} bit/s "
                         f"({format_rate(lo)} .. {format_rate(hi)}); 0 means unshaped")
    return min(2**32 - 1, round(8 * f_sys_hz * 65536 / rate_bps))
