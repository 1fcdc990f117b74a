"""Accurate ECN (RFC 9768) download flows for the benches, and an
independent check of what the filter let through.

The machine's Linux refuses ``net.ipv4.tcp_ecn=3``, so AccECN ACK streams
are built here from the RFC: :class:`AccEcnReceiver` is a data receiver in
AccECN mode. It counts the CE-marked packets it receives (``r.cep``,
initialised to 5) and the payload bytes by IP-ECN codepoint (``r.e0b`` and
``r.e1b`` from 1, ``r.ceb`` from 0), and sends pure ACKs carrying ``r.cep``
mod 8 in the ACE field (AE, CWR, ECE) and the byte counters mod 2^24 in an
AccECN option (kind 172 or 174, full or cut short, or none at all). It
ACKs every second segment, at once when a segment's CE-ness differs from the
previous one (a change-triggered ACK) and after at most two CE marks.

Each ACK comes with its *truth*: the unwrapped counters it stands for.
:func:`check_flow` then checks a flow's ACKs that left the filter against
the ACKs that entered it with that truth alone, not with the filter's
model: a sender could decode every CE mark and every byte counter from
what reached it (the ACE field never advances by 8 or more, a byte counter
by 2^23 or more, between two ACKs that leave one after the other), no ACK
left that did not enter, the order held, and the newest news arrived.
"""

import random
from dataclasses import dataclass

from ..model.pktparse import ACE_LIMIT, OPT_ACCECN0, OPT_ACCECN1
from .traces import Flow, tcp_frame

__all__ = ["AccEcnReceiver", "AckTruth", "accecn_trace", "check_flow", "FLOWS"]

#: Flows of the benches: IPv4, IPv6, a VLAN tag, PPPoE.
FLOWS = (
    Flow(src="192.168.1.20", sport=51000),
    Flow(src="2001:db8::20", dst="2001:db8::5", sport=51001),
    Flow(src="192.168.1.21", sport=51002, vlans=((0x8100, 9),)),
    Flow(src="192.168.1.22", sport=51003, pppoe_session=0x4321),
)

MSS = 1448
ECN_ECT1, ECN_ECT0, ECN_CE = 1, 2, 3


@dataclass(frozen=True)
class AckTruth:
    """What one ACK stands for, unwrapped."""
    ack: int
    cep: int
    e0b: int
    ceb: int
    e1b: int


class AccEcnReceiver:
    """The download's receiver of one flow, in AccECN mode (RFC 9768 section
    3.2): ``receive`` a segment, and it may answer with an ACK.

    ``option``: ``"full"`` (all three counters), ``"short"`` (the option cut
    to the counters that changed, at least one), or ``"none"``; ``kind``: 172
    or 174.
    """

    def __init__(self, flow, *, option="full", kind=OPT_ACCECN0, isn=1000, ts=True, start_bytes=0):
        self.flow, self.option, self.kind, self.ts = flow, option, kind, ts
        self.rcv_nxt = isn
        self.cep, self.e0b, self.ceb, self.e1b = 5, 1 + start_bytes, 0, 1
        self.unacked = 0            # segments since the last ACK
        self.ce_unacked = 0
        self.last_ce = False
        self.sent = 0
        self._acked = (self.e0b, self.ceb, self.e1b)

    def receive(self, ecn, nbytes=MSS):
        """One data segment with IP-ECN field ``ecn``; returns ``(frame,
        truth)`` of the ACK it triggers, or None."""
        ce = ecn == ECN_CE
        if ce:
            self.cep += 1
            self.ceb += nbytes
            self.ce_unacked += 1
        elif ecn == ECN_ECT1:
            self.e1b += nbytes
        else:
            self.e0b += nbytes
        self.rcv_nxt += nbytes
        self.unacked += 1
        change = ce != self.last_ce
        self.last_ce = ce
        if self.unacked >= 2 or change or self.ce_unacked >= 2:
            return self.ack()
        return None

    def _option(self):
        counters = {"e0b": self.e0b, "ceb": self.ceb, "e1b": self.e1b}
        order = ("e0b", "ceb", "e1b") if self.kind == OPT_ACCECN0 else ("e1b", "ceb", "e0b")
        n = 3
        if self.option == "short":
            # Up to the last counter that changed since the previous ACK.
            changed = [k for k, name in enumerate(order)
                       if counters[name] != dict(zip(("e0b", "ceb", "e1b"), self._acked))[name]]
            n = max(changed) + 1 if changed else 1
        body = b"".join((counters[name] & 0xFF_FFFF).to_bytes(3, "big") for name in order[:n])
        return [(self.kind, body)] + [("NOP", None)] * (-(2 + len(body)) % 4)

    def ack(self):
        options = []
        if self.ts:
            options += [("NOP", None), ("NOP", None), ("Timestamp", (1000 + self.sent, 77))]
        if self.option != "none":
            options += self._option()
        ace = self.cep & 7
        flags = "A" + ("E" if ace & 1 else "") + ("C" if ace & 2 else "") + ("N" if ace & 4 else "")
        frame = tcp_frame(self.flow, seq=1, ack=self.rcv_nxt & 0xFFFF_FFFF, flags=flags, options=options,
                          ip_id=self.sent & 0xFFFF, builder="raw")
        self.sent += 1
        self.unacked = self.ce_unacked = 0
        self._acked = (self.e0b, self.ceb, self.e1b)
        return frame, AckTruth(self.rcv_nxt, self.cep, self.e0b, self.ceb, self.e1b)


def accecn_trace(seed, *, segments=3000, p_ce=0.15, burst=0.6, seg_rate_pps=8000,
                 options=("full", "full", "short", "none")):
    """ACK frames of :data:`FLOWS` downloading at once, ``[(t, frame)]``, and
    the truth of each ACK by frame bytes. CE marks come in bursts (a marked
    segment is followed by another with probability ``burst``), so the ACE
    field moves by several at a time and wraps often."""
    rng = random.Random(seed)
    receivers = [AccEcnReceiver(f, option=options[i % len(options)],
                                kind=(OPT_ACCECN0, OPT_ACCECN1)[i % 2], isn=1000 + 7919 * i,
                                start_bytes=rng.randrange(1 << 24))
                 for i, f in enumerate(FLOWS)]
    marked = [False] * len(FLOWS)
    out, truth, t = [], {}, 0.0
    for _ in range(segments):
        k = rng.randrange(len(FLOWS))
        marked[k] = rng.random() < (burst if marked[k] else p_ce)
        ecn = ECN_CE if marked[k] else rng.choice((ECN_ECT0, ECN_ECT0, ECN_ECT0, ECN_ECT1))
        got = receivers[k].receive(ecn)
        t += rng.expovariate(seg_rate_pps)
        if got is not None:
            frame, tr = got
            out.append((t, frame))
            truth[frame] = (k, tr)
    return out, truth


def check_flow(sent, received, *, newest_leaves=True):
    """``sent``: the flow's ACKs in the order they entered, ``[(frame,
    truth)]``; ``received``: the frames of the flow that left, in order.
    Returns how many ACKs were superseded or dropped (sent - received);
    raises ``AssertionError`` at the first fault. ``newest_leaves``: the
    last of ``sent`` must leave (not so for a stretch whose news went with
    a lost ACK that came after it)."""
    index = {frame: i for i, (frame, _) in enumerate(sent)}
    last = -1
    prev = None
    for n, frame in enumerate(received):
        i = index.get(frame)
        assert i is not None, f"output ACK #{n} never entered the filter (or was changed)"
        assert i > last, f"output ACK #{n} left out of order (input #{i} after #{last})"
        tr = sent[i][1]
        if prev is not None:
            assert tr.cep - prev.cep < ACE_LIMIT, (
                f"output ACK #{n}: the CE counter advanced by {tr.cep - prev.cep} since the "
                f"previous ACK that left: a sender reads {(tr.cep - prev.cep) % 8} from the ACE field")
            for name in ("e0b", "ceb", "e1b"):
                d = getattr(tr, name) - getattr(prev, name)
                assert 0 <= d < 1 << 23, f"output ACK #{n}: {name} advanced by {d}"
            assert tr.ack >= prev.ack
        prev, last = tr, i
    assert last == len(sent) - 1 or not newest_leaves, "the flow's newest ACK did not leave"
    return len(sent) - len(received)
