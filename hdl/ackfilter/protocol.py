"""The numbers the golden model and the gateware share: what the wire
formats fix (TCP flags, ECN codepoints, the minimum frame) and what the spec
fixes (the spans of a supersession's comparisons, RED's fixed-point formats,
the segmenter's blocks, the DRR quantum's bounds).

Each is defined here once; the model (:mod:`ackfilter.model`) and the
gateware (:mod:`ackfilter.gateware`) both import it from here, so the
gateware depends on no part of the model and the generated Verilog on none
of the model's files. The flow key's layout is :mod:`ackfilter.flowkey`,
the sizes and registers :mod:`ackfilter.params`."""

from .params import param

__all__ = [
    "TCP_FIN", "TCP_SYN", "TCP_RST", "TCP_PSH", "TCP_ACK", "TCP_URG", "TCP_ECE", "TCP_CWR", "TCP_PROTOCOL",
    "ECN_NOT_ECT", "ECN_ECT1", "ECN_ECT0", "ECN_CE", "MIN_FRAME_BYTES",
    "SANE_SPAN", "ACCECN_HI_SPAN", "ACE_LIMIT",
    "AVG_FRAC_BITS", "P_FRAC_BITS", "MAX_QLEN_BYTES", "COUNT_MAX", "RED_PRNG_SEED",
    "SEGMENT_BLOCK_BYTES", "MAX_CHUNK_BYTES", "QUANTUM_MIN", "QUANTUM_MAX",
]


# Wire formats.

#: TCP flag bits of byte 13 and the low nibble of byte 12 (RFC 9293, RFC 9768 "AE").
TCP_FIN, TCP_SYN, TCP_RST, TCP_PSH, TCP_ACK, TCP_URG, TCP_ECE, TCP_CWR = (1 << i for i in range(8))

#: TCP's IP protocol number (IANA), as the checksum's pseudo-header has it
#: (RFC 9293 section 3.1).
TCP_PROTOCOL = 6

#: ECN codepoints, the two low bits of the IPv4 TOS / IPv6 traffic class
#: (RFC 3168 section 5).
ECN_NOT_ECT, ECN_ECT1, ECN_ECT0, ECN_CE = 0, 1, 2, 3

#: The shortest frame without its FCS (IEEE 802.3's 64 bytes less the 4 of
#: the FCS): a MAC pads a shorter one with zeros, and so does the segmenter
#: a chunk.
MIN_FRAME_BYTES = 60


# The ACK queue (spec section 3).

#: A SACK block is *sane* when it lies wholly within this many bytes above
#: its ACK's cumulative ack (spec section 3): then every sequence number a
#: supersession compares lies within 2^31 of the flow's floor, where serial
#: arithmetic orders them as integers (so coverage is transitive).
SANE_SPAN = 1 << 30

#: AccECN (spec section 3, "AccECN"): a chain's byte counters stay within
#: this many steps of 2^16 of the floor's, compared on their top 8 bits (so
#: the chain advances each counter by less than 2^22).
ACCECN_HI_SPAN = 63

#: The ACE field of two ACKs of a flow that leave one after the other
#: advances by less than this (a sender could not tell an advance of 8 from
#: none).
ACE_LIMIT = 8


# RED (spec section 10).

#: Fraction bits of the average: ``avg_q16`` is the average queue length in
#: bytes times 2^16. With ``wq_shift`` <= 15 the rounding of
#: :func:`ackfilter.model.red.ewma_step` keeps it less than 2^wq_shift / 2^16 < 0.5 byte below
#: the exact average (spec section 10, "Average").
AVG_FRAC_BITS = 16
#: Fraction bits of a probability: ``max_p`` and the random number are in
#: units of 1/65536.
P_FRAC_BITS = 16
#: Largest queue occupancy and threshold in bytes (20-bit registers: room for
#: any data ring the board's block RAM can hold; the default ring is 32768).
MAX_QLEN_BYTES = param("red_max_bytes").maximum
#: ``count`` (unmarked packets since the last notification) is a 16-bit
#: counter that saturates here.
COUNT_MAX = (1 << 16) - 1
#: Reset value of the xorshift32 state: Marsaglia's example seed
#: (Marsaglia 2003, "Xorshift RNGs", J. Stat. Softw. 8(14), section 3).
RED_PRNG_SEED = 2463534242


# The segmenter (spec section 9).

#: Payload bytes per partial sum the hardware keeps (four words of the 32-bit
#: datapath). ``chunk_bytes`` must be a multiple of it.
SEGMENT_BLOCK_BYTES = 16
#: Largest ``chunk_bytes``: 91 blocks, the largest multiple of the block below
#: 1460 (the payload of a full-size IPv4 segment without options, 1500-byte MTU).
MAX_CHUNK_BYTES = 1456
assert MAX_CHUNK_BYTES % SEGMENT_BLOCK_BYTES == 0 and SEGMENT_BLOCK_BYTES % 2 == 0


# Fair queueing (spec section 12).

#: The quantum's bounds (sch_cake.c, cake_set_rate: ``max(min(rate >> 12, 1514), 300)``).
QUANTUM_MIN, QUANTUM_MAX = 300, 1514
