"""The link-layer encapsulations the model tests build frames in (shared by
the segmenter's and RED's tests): Ethernet II, 802.1Q, QinQ (802.1ad and the
older 0x9100 outer tag), PPPoE session, PPPoE session in an 802.1Q tag."""

from scapy.layers.l2 import Dot1AD, Dot1Q, Ether
from scapy.layers.ppp import PPP, PPPoE

__all__ = ["MACS", "ENCAPS", "L2_BYTES", "l2_header", "dissect"]

MACS = dict(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
ENCAPS = ("eth", "dot1q", "qinq", "qinq-9100", "pppoe", "pppoe-dot1q")
#: Bytes before the IP header, per encapsulation.
L2_BYTES = {"eth": 14, "dot1q": 18, "qinq": 22, "qinq-9100": 22, "pppoe": 22, "pppoe-dot1q": 26}


def l2_header(encap, *, v6=False):
    """The Scapy layers in front of an IPv4 (or, ``v6``, IPv6) packet."""
    ppp = PPP(proto=0x0057 if v6 else 0x0021)
    if encap == "eth":
        return Ether(**MACS)
    if encap == "dot1q":
        return Ether(**MACS) / Dot1Q(vlan=100, prio=5)
    if encap == "qinq":
        return Ether(**MACS) / Dot1AD(vlan=200) / Dot1Q(vlan=300)
    if encap == "qinq-9100":
        return Ether(**MACS, type=0x9100) / Dot1Q(vlan=7) / Dot1Q(vlan=8)
    if encap == "pppoe":
        return Ether(**MACS) / PPPoE(sessionid=0x1234) / ppp
    if encap == "pppoe-dot1q":
        return Ether(**MACS) / Dot1Q(vlan=7) / PPPoE(sessionid=9) / ppp
    raise ValueError(f"encap must be one of {', '.join(ENCAPS)}, not {encap!r}")


def dissect(frame):
    """Scapy's view of ``frame`` (a 0x9100 outer tag is not bound in Scapy: dissected by hand)."""
    if frame[12:14] == b"\x91\x00":
        return Ether(frame[:14]) / Dot1Q(frame[14:])
    return Ether(frame)
