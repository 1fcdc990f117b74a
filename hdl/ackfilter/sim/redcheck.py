"""What the RED benches share (``tests/test_red_core.py`` through the replay
harness, ``cocotb_tests/tb_red.py`` at 1 Gb/s): the flows of their traffic,
a model that counts the idle decays it applied, and an independent check of
every CE mark that leaves the core, by Scapy rather than by the model.
"""

from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.layers.ppp import PPPoE  # noqa: F401 (binds PPPoE sessions to PPP, IP, IPv6)

from ..params import ARRIVAL_EVENTS
from ..model.red import ECN_CE, ECN_ECT0, ECN_ECT1, Red, ecn_codepoint, ip_header
from .traces import Flow

__all__ = ["FLOWS", "CountingRed", "check_marks", "queued_marks"]

#: One flow per encapsulation RED must find the IP header in: IPv4, IPv6,
#: a VLAN tag, PPPoE, and IPv6 in PPPoE under two tags.
FLOWS = (
    Flow(),
    Flow(src="2001:db8::10", dst="2001:db8::5", sport=50001),
    Flow(sport=50002, vlans=((0x8100, 7),)),
    Flow(sport=50003, pppoe_session=0x1234),
    Flow(src="2001:db8::11", dst="2001:db8::5", sport=50004, vlans=((0x88A8, 3), (0x8100, 4)),
         pppoe_session=0x55),
)


class CountingRed(Red):
    """:class:`~ackfilter.model.red.Red`, counting the arrivals at an empty
    queue that found the average decayed (``decays``): a bench asserts its
    traffic exercised the idle decay."""
    decays = 0

    def arrive(self, frame, qlen_bytes, now_cycles, **kw):
        before = self.avg_q16
        out = super().arrive(frame, qlen_bytes, now_cycles, **kw)
        self.decays += qlen_bytes == 0 and self.avg_q16 < before
        return out


def _without_mark(frame):
    """``frame`` with its ECN field and IPv4 header checksum zeroed: what a
    mark leaves as it was."""
    hdr = ip_header(frame)
    if hdr is None:
        return frame
    off, version = hdr
    f = bytearray(frame)
    f[off + 1] &= 0xFC if version == 4 else 0xCF
    if version == 4:
        f[off + 10:off + 12] = b"\0\0"
    return bytes(f)


def check_marks(sent, received):
    """Every frame of ``received`` is one of ``sent`` or that frame marked:
    then it was ECT(0) or ECT(1), Scapy reads CE and (IPv4) a right header
    checksum and the same DSCP, and no byte but the ECN field and the
    checksum changed. Raises ``AssertionError``; returns how many were marked."""
    originals = {_without_mark(f): f for f in sent}
    marked = 0
    for f in received:
        orig = originals.get(_without_mark(f))
        assert orig is not None, f"a frame left that was never sent, marked or not: {f.hex()}"
        if f == orig:
            continue
        assert ecn_codepoint(orig) in (ECN_ECT0, ECN_ECT1) and ecn_codepoint(f) == ECN_CE, f.hex()
        off, version = ip_header(f)
        if version == 4:
            ip, was = Ether(f)[IP], Ether(orig)[IP]
            assert ip.tos & 3 == 3 and ip.tos >> 2 == was.tos >> 2, f.hex()
            got = ip.chksum
            del ip.chksum
            assert IP(bytes(ip)).chksum == got, f"wrong IPv4 header checksum after the mark: {f.hex()}"
            allowed = {off + 1, off + 10, off + 11}
        else:
            ip, was = Ether(f)[IPv6], Ether(orig)[IPv6]
            assert ip.tc & 3 == 3 and ip.tc >> 2 == was.tc >> 2, f.hex()
            allowed = {off + 1}
        changed = {i for i in range(len(f)) if f[i] != orig[i]}
        assert changed <= allowed, (sorted(changed), sorted(allowed))
        marked += 1
    return marked


def queued_marks(sent, events):
    """How many frames of ``sent`` the core queued marked from ECT
    (``ARRIVE_DATA_MARKED`` of a frame not CE already): what
    :func:`check_marks` must find leaving once everything has left."""
    arrivals = zip(sent, [e for _c, e in events if e in ARRIVAL_EVENTS])
    return sum(e == "ARRIVE_DATA_MARKED" and ecn_codepoint(f) != ECN_CE for f, e in arrivals)
