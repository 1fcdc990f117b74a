"""Streaming Ethernet/VLAN/PPPoE/IPv4/IPv6/TCP parser and pure-ACK classifier.

The parser watches the words of a frame go by and, two cycles after the
frame's last word, presents one :data:`parse_result_layout`
record: the frame's class, its flow key and tag (every frame's,
``ackfilter.flowkey``) and, for a pure ACK, whether it is eligible for
supersession and everything the queue manager needs to decide about it. The
rules are those of ``docs/spec.md`` section 2; a frame the parser cannot
prove to be a zero-payload ACK-flagged TCP segment is ``DATA``, and a pure
ACK it cannot prove well-formed in every detail (flags, IP options,
padding, PPPoE length, checksums, options) is not eligible.

The IPv4 header checksum and the TCP checksum (over the pseudo-header and the
TCP header; a pure ACK has no payload) are summed while the words go by, two
16-bit halves a cycle, in ones' complement with the end-around carry folded
back every cycle (RFC 1071).

Every L3 and L4 header starts two bytes into a 32-bit word (14-byte Ethernet
header, 4-byte tags, 8-byte PPPoE+PPP header, IP headers in 32-bit units), so
the parser realigns the stream by two bytes once and then works on whole
header words, one per cycle. TCP options, which are byte-aligned, are walked
two bytes per cycle by a chain of two byte steps, so each options word takes
two cycles (``ready`` is low for the first): at most ten extra cycles for 40
bytes of options, well inside the 33.6 cycles a minimum frame lasts at line rate,
and half the logic depth of a four-byte chain.
"""

from types import SimpleNamespace

from amaranth.lib import enum

from amaranth.hdl import *
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..flowkey import HOST_BITS, KEY_WORDS, PORT_PROTOCOLS, TPID_CODES, host_fold_bits, tag_matrix
from ..params import ACK_SLOT_BYTES, MAX_FRAME_BYTES
from .lib.stream import WORD_BYTES

__all__ = ["FrameClass", "sack_block_layout", "ack_meta_layout", "ack_details_layout", "ip_header_layout",
           "seg_info_layout", "parse_result_layout", "FrameParser", "DONE_AFTER_LAST"]

#: ``done`` comes this many cycles after the cycle that takes a frame's last
#: word (flush, finalize, done); ``ready`` is low meanwhile. The ingress
#: relies on it (``formal/ingress.py`` proves it).
DONE_AFTER_LAST = 3


class FrameClass(enum.Enum, shape=2):
    DATA      = 0
    ACK       = 1
    RUNT      = 2
    OVERSIZE  = 3


sack_block_layout = data.StructLayout({"start": 32, "end": 32})

#: What the queue manager needs of a pure ACK to decide on it at once;
#: ``tag`` and ``host`` (the source address's fold, spec section 12,
#: "Hosts") are every frame's. (The flow key, every frame's too, is the
#: result's ``key``, and an ACK's options are its ``details``: the ingress
#: writes both to the frame's key slot, not into the entry.)
ack_meta_layout = data.StructLayout({
    "tag":        16,
    "host":       HOST_BITS,
    "ack":        32,
    "has_ts":     1,
    "sack_n":     3,
    "other_opts": 1,
    "eligible":   1,
    "ece":        1,
    "cwr":        1,
    "ae":         1,
    "ecn":        2,
    # The AccECN option (RFC 9768; spec section 3, "AccECN"): present, and
    # which counters it carries (bit i: model.pktparse.ACCECN_FIELDS[i]).
    "accecn_opt":  1,
    "accecn_mask": 3,
})

#: A pure ACK's option values (0 where absent, or beyond ``sack_n``): its
#: timestamps, SACK blocks and AccECN counters, in the order
#: ``accecn_mask`` names them (EE0B, ECEB, EE1B).
ack_details_layout = data.StructLayout({
    "tsval":  32,
    "tsecr":  32,
    "sack":   data.ArrayLayout(sack_block_layout, 4),
    "accecn": data.ArrayLayout(24, 3),
})

#: Where a frame's IP header is, for RED's CE mark (spec section 10):
#: ``found`` as ``model.red.ip_header`` finds one, ``word`` the 32-bit word
#: holding its first two bytes (the header starts at byte 2 of it: every
#: encapsulation adds a multiple of 4 bytes to Ethernet's 14), ``ipv6``.
#: The ECN field itself is ``meta.ecn``.
ip_header_layout = data.StructLayout({
    "found": 1,
    "word":  3,
    "ipv6":  1,
})

#: What the segmenter (spec section 9) needs of a data frame, gathered while
#: it is written (``model.segmenter.seg_info`` is its executable form). Every
#: header starts at byte 2 of a 32-bit word (see ``ip_header_layout``), and
#: so does the TCP payload: ``tcp_word`` and ``pay_word`` are the words
#: holding the TCP header's and the payload's first two bytes in lanes 2-3.
#: ``sum`` is the ones' complement sum, in lane order (each 16-bit word's
#: bytes swapped, RFC 1071 section 2 (B)), of the pseudo-header's addresses
#: and of the TCP header with the sequence number, the data-offset/flags word
#: and the checksum left out; ``offflags`` is that data-offset/flags word
#: (TCP bytes 12-13, network order) and ``hdr_tail`` lanes 0-1 of word
#: ``pay_word`` (the header's last two bytes, as stored). ``ok``: every rule
#: of spec section 9's "never cut" holds but the payload's length.
seg_info_layout = data.StructLayout({
    "ok":        1,
    "pppoe":     1,
    "tcp_word":  6,
    "pay_word":  7,
    "pay_bytes": 11,
    "seq":       32,
    "offflags":  16,
    "sum":       16,
    "hdr_tail":  16,
})

parse_result_layout = data.StructLayout({
    "cls":      FrameClass,
    "pure_ack": 1,       # a pure ACK by the rules, whatever the ACK filter mode
    "nbytes":   16,      # frame length, saturating
    "l3_bytes": 16,      # IP packet length for the shaper (spec section 6)
    "ip":       ip_header_layout,
    "key":      data.ArrayLayout(32, KEY_WORDS),
    "meta":     ack_meta_layout,
    "details":  ack_details_layout,
    "seg":      seg_info_layout,
})


#: The option walker's phase: at an option's kind byte, at its length byte,
#: or in its body.
_OPT_KIND, _OPT_LEN, _OPT_BODY = 0, 1, 2


class _S(enum.Enum, shape=4):
    ETH    = 0
    VLAN   = 1
    PPPOE0 = 2
    PPPOE1 = 3
    IP4    = 4
    IP6    = 5
    TCP    = 6
    OPTS   = 7
    DONE   = 8     # TCP header complete; payload or padding follows
    OTHER  = 9     # not a candidate: the rest of the frame is ignored


def _be16(b0, b1):
    return Cat(b1, b0)


def _be32(b):
    return Cat(b[3], b[2], b[1], b[0])


def _fold16(x):
    # An 18-bit ones' complement sum folded once: 16 bits plus the carry.
    return x[0:16] + x[16:18]


class FrameParser(wiring.Component):
    """Classify frames as they stream past.

    Ports
    -----
    valid, data, keep, last : In
        One frame word per cycle when ``valid``. ``keep`` matters on ``last``.
    ready : Out(1)
        Low for three cycles after each ``last`` (flush, finalize, and the
        cycle ``done`` is presented, so the parser's user can commit the frame
        before the next one starts), and for the first cycle of each word of
        TCP options (the walker takes two). Words offered while low are not
        taken.
    done : Out(1)
        One-cycle strobe: ``result`` holds the class of the frame just seen.
    result : Out(parse_result_layout)
    sum_we, sum_block, sum_value : Out
        The segmenter's block sums (spec section 9): a one-cycle strobe, the
        payload block's number (block ``j`` holds payload bytes ``16j`` to
        ``16j + 15``, the last one maybe fewer) and its ones' complement sum
        in lane order (``model.segmenter.lane_block_sums``). Strobed while the
        payload goes by, for every TCP segment whose header the parser read;
        the last block's strobe comes at the latest with ``done``.
    pay_word : Out(7)
        The frame word holding the payload's first two bytes (lanes 2-3),
        valid from the first ``sum_we`` of a frame until its ``done``.
    """

    valid:  In(1)
    data:   In(32)
    keep:   In(WORD_BYTES)
    last:   In(1)
    ready:  Out(1)
    done:   Out(1)
    result: Out(parse_result_layout)
    sum_we:    Out(1)
    sum_block: Out(7)
    sum_value: Out(16)
    pay_word:  Out(7)

    def elaborate(self, platform):
        m = Module()
        # Each stage adds to `m` in turn and shares its signals through `s`.
        s = SimpleNamespace()
        self._realign(m, s)
        self._header_fields(s)
        self._option_fields(s)
        self._parse_headers(m, s)
        self._checksums(m, s)
        self._segmenter_sums(m, s)
        self._option_walker(m, s)
        self._finalize(m, s)
        return m

    def _realign(self, m, s):
        """Realign the stream by two bytes and count the frame's bytes.

        Every L3 and L4 header starts two bytes into a frame word, so the
        parser works on R words (frame bytes 4k+2 .. 4k+5): ``hold`` keeps the
        previous word's upper lanes, ``r_valid``/``r_shown``/``r_full`` say
        whether an R word is taken, presented and whole. Also tracks the frame
        (``in_frame``, ``flush``, ``finalize``, ``nbytes``) and drives ``ready``.
        """
        # --- Realignment: R word k is frame bytes 4k+2 .. 4k+5. --------------
        in_frame   = Signal()               # at least one word of this frame seen
        hold       = Signal(16)             # lanes 2, 3 of the previous word
        hold_n     = Signal(range(3))       # how many of them are frame bytes
        flush      = Signal()               # the cycle after `last`: last R word
        finalize   = Signal()               # the cycle after flush: result
        nbytes     = Signal(16)

        in_bytes = Signal(range(5))
        with m.Switch(self.keep):
            for k, n in ((0b0001, 1), (0b0011, 2), (0b0111, 3)):
                with m.Case(k):
                    m.d.comb += in_bytes.eq(Mux(self.last, n, 4))
            with m.Default():
                m.d.comb += in_bytes.eq(4)

        # The R word is always `hold` and the input's lanes 0-1; when it is not
        # full (the frame's tail, or the flush cycle) every use is guarded by
        # `r_full`, so the lanes past the frame's end need no multiplexer.
        r_valid = Signal()                  # an R word is taken this cycle
        r_shown = Signal()                  # an R word is presented (maybe not taken)
        r_word  = Signal(32)
        r_full  = Signal()
        m.d.comb += [
            r_word.eq(Cat(hold, self.data[0:16])),
            r_shown.eq((self.valid & in_frame) | (flush & (hold_n != 0))),
            r_valid.eq((self.valid & self.ready & in_frame) | (flush & (hold_n != 0))),
            r_full.eq(in_frame & (hold_n == 2) & ~(self.last & (self.keep == 0b0001))),
        ]

        with m.If(self.valid & self.ready):
            m.d.sync += [
                hold.eq(self.data[16:32]),
                hold_n.eq(Mux(in_bytes > 2, in_bytes - 2, 0)),
                in_frame.eq(~self.last),
                flush.eq(self.last),
            ]
            with m.If(in_frame):
                m.d.sync += nbytes.eq(Mux(nbytes > 0xFFFF - 4, 0xFFFF, nbytes + in_bytes))
            with m.Else():
                m.d.sync += nbytes.eq(in_bytes)
        with m.Else():
            m.d.sync += flush.eq(0)
        m.d.sync += finalize.eq(flush)
        # An options word is walked in two halves: `opt_half` says the first
        # two bytes are done (`state` is defined below, in `_header_fields`).
        opt_half = Signal()
        opt_stall = Signal()
        m.d.comb += self.ready.eq(~(flush | finalize | self.done | opt_stall))

        rb = [r_word[8 * i:8 * i + 8] for i in range(4)]
        vars(s).update(
            in_frame=in_frame, finalize=finalize, nbytes=nbytes, r_valid=r_valid, r_shown=r_shown,
            r_word=r_word, r_full=r_full, opt_half=opt_half, opt_stall=opt_stall, rb=rb)

    def _header_fields(self, s):
        """Declare the header registers the parser fills in as a frame goes by.

        The header state machine's ``state``, word counters, the L2 tags and
        PPPoE fields, the IP and TCP header fields, the addresses and the
        host's fold of the source; no logic is added to the module here.
        """
        # --- Header state ------------------------------------------------------
        state   = Signal(_S)
        ridx    = Signal(2)                 # R words of the Ethernet header seen
        hw      = Signal(5)                 # word index inside the current header
        ntags   = Signal(2)
        vid     = Array(Signal(12, name=f"vid{i}") for i in range(2))
        tpid    = Array(Signal(2, name=f"tpid{i}") for i in range(2))   # TPID_CODES
        tpid_next = Signal(2)               # code of the TPID that announced the next tag
        pppoe   = Signal()
        pppoe_sid = Signal(16)
        pppoe_len = Signal(16)
        ipv6    = Signal()
        ihl     = Signal(4)
        ecn     = Signal(2)
        ip_len  = Signal(16)                # IPv4 total length or IPv6 payload length
        ip_seen = Signal()                  # ip_len holds a length from an IP header
        ip_ok   = Signal()                  # the IP header's version (and IPv4 IHL) hold
        ip_proto = Signal(8)                # IPv4 protocol, IPv6 fixed header's next header
        ip_frag  = Signal()                 # IPv4 MF or fragment offset
        l4_ports = Signal()                 # ports follow the IP header (registered off ip_proto)
        src     = Array(Signal(32, name=f"src{i}") for i in range(4))
        # The host's fold of the source address (``flowkey.host_bucket``),
        # gathered as its words arrive: the fold is linear, so each word's
        # own fold XORed in gives the address's (from the 32 bits on the
        # datapath, not from the 128 of the key: 86 LUT4 that way).
        host = Signal(HOST_BITS)

        dst     = Array(Signal(32, name=f"dst{i}") for i in range(4))
        ports   = Signal(32)
        ack     = Signal(32)
        doff    = Signal(4)
        flags   = Signal(8)
        tcp_res = Signal(4)                 # reserved bits and AE
        l3_off   = Signal(16)
        ip_end   = Signal(17)
        ip_bytes = Signal(17)               # the IP packet's own length
        seq      = Signal(32)
        offflags = Signal(16)               # TCP bytes 12-13, network order
        hdr_tail = Signal(16)               # the TCP header's last two bytes (lane order)
        vars(s).update(
            state=state, ridx=ridx, hw=hw, ntags=ntags, vid=vid, tpid=tpid, tpid_next=tpid_next,
            pppoe=pppoe, pppoe_sid=pppoe_sid, pppoe_len=pppoe_len, ipv6=ipv6, ihl=ihl, ecn=ecn,
            ip_len=ip_len, ip_seen=ip_seen, ip_ok=ip_ok, ip_proto=ip_proto, ip_frag=ip_frag,
            l4_ports=l4_ports, src=src, host=host, dst=dst, ports=ports, ack=ack, doff=doff,
            flags=flags, tcp_res=tcp_res, l3_off=l3_off, ip_end=ip_end, ip_bytes=ip_bytes, seq=seq,
            offflags=offflags, hdr_tail=hdr_tail)

    def _option_fields(self, s):
        """Declare the TCP option walker's registers.

        The walker's phase and position inside an option, what it has found
        (timestamps, SACK blocks, AccECN, signatures, other options, malformed
        ones) and the captured option bytes; no logic is added to the module here.
        """
        # --- TCP option walker state -------------------------------------------
        opt_phase   = Signal(2)             # at a kind byte, a length byte, or in a body
        opt_left    = Signal(8)             # in a body: its bytes left, the current one included
        opt_at      = Signal(8)             # in a body: the current byte's index
        opt_is_ts   = Signal()              # the option's kind: timestamps (8)
        opt_is_sack = Signal()              # SACK (5)
        opt_is_aecn = Signal()              # AccECN (172 or 174)
        aecn_kind1  = Signal()              # the AccECN option is kind 174 (counters in reverse order)
        aecn_n      = Signal(2)             # how many counters it carries
        has_aecn    = Signal()
        opt_eol   = Signal()
        opt_bad   = Signal()                # the options make a pure ACK ineligible
        opt_wbad  = Signal()                # the options do not walk (a length below 2)
        opt_sig   = Signal()                # a TCP-MD5 (19) or TCP-AO (29) option: never cut
        has_ts    = Signal()
        sack_n    = Signal(3)
        other_opt = Signal()
        ts_bytes   = Array(Signal(8, name=f"ts_b{i}") for i in range(8))
        sack_bytes = Array(Signal(8, name=f"sack_b{i}") for i in range(32))
        aecn_bytes = Array(Signal(8, name=f"aecn_b{i}") for i in range(9))
        vars(s).update(
            opt_phase=opt_phase, opt_left=opt_left, opt_at=opt_at, opt_is_ts=opt_is_ts,
            opt_is_sack=opt_is_sack, opt_is_aecn=opt_is_aecn, aecn_kind1=aecn_kind1, aecn_n=aecn_n,
            has_aecn=has_aecn, opt_eol=opt_eol, opt_bad=opt_bad, opt_wbad=opt_wbad, opt_sig=opt_sig,
            has_ts=has_ts, sack_n=sack_n, other_opt=other_opt, ts_bytes=ts_bytes,
            sack_bytes=sack_bytes, aecn_bytes=aecn_bytes)

    def _parse_headers(self, m, s):
        """Walk the headers: the state machine that reads one R word a cycle.

        From the Ethernet header through up to two VLAN tags, PPPoE, the IPv4
        or IPv6 header and the fixed TCP header, storing the fields the key,
        the classifier and the segmenter need, and giving up (``_S.OTHER``) on
        anything that is not a candidate. Also registers ``l4_ports``.
        """
        r_valid, r_word, r_full, rb, state = s.r_valid, s.r_word, s.r_full, s.rb, s.state
        ridx, hw, ntags, vid, tpid, tpid_next = s.ridx, s.hw, s.ntags, s.vid, s.tpid, s.tpid_next
        pppoe, pppoe_sid, pppoe_len, ipv6, ihl = s.pppoe, s.pppoe_sid, s.pppoe_len, s.ipv6, s.ihl
        ecn, ip_len, ip_seen, ip_ok, ip_proto = s.ecn, s.ip_len, s.ip_seen, s.ip_ok, s.ip_proto
        ip_frag, l4_ports, src, host, dst = s.ip_frag, s.l4_ports, s.src, s.host, s.dst
        ports, ack, doff, flags, tcp_res, seq = s.ports, s.ack, s.doff, s.flags, s.tcp_res, s.seq
        offflags = s.offflags

        def host_piece(word):
            return Cat(*[Cat(*[word[b] for b in bits if b < 32]).xor() for bits in host_fold_bits()])

        def dispatch(etype, tags_seen):
            with m.Switch(etype):
                for tpid_value, code in TPID_CODES.items():
                    with m.Case(tpid_value):
                        with m.If(tags_seen == 2):              # a third tag
                            m.d.sync += state.eq(_S.OTHER)
                        with m.Else():
                            m.d.sync += [state.eq(_S.VLAN), tpid_next.eq(code)]
                with m.Case(0x0800):
                    m.d.sync += [state.eq(_S.IP4), hw.eq(0)]
                with m.Case(0x86DD):
                    m.d.sync += [state.eq(_S.IP6), hw.eq(0), ipv6.eq(1)]
                with m.Case(0x8864):
                    m.d.sync += state.eq(_S.PPPOE0)
                with m.Default():
                    m.d.sync += state.eq(_S.OTHER)
        with m.If(r_valid):
            with m.Switch(state):
                with m.Case(_S.ETH):
                    m.d.sync += ridx.eq(ridx + 1)
                    with m.If(ridx == 2):
                        with m.If(r_full):
                            dispatch(_be16(rb[2], rb[3]), tags_seen=0)
                        with m.Else():
                            m.d.sync += state.eq(_S.OTHER)

                with m.Case(_S.VLAN):
                    with m.If(r_full):
                        m.d.sync += [
                            vid[ntags[0]].eq(_be16(rb[0], rb[1])[0:12]),
                            tpid[ntags[0]].eq(tpid_next),
                            ntags.eq(ntags + 1),
                        ]
                        dispatch(_be16(rb[2], rb[3]), tags_seen=ntags + 1)
                    with m.Else():
                        m.d.sync += state.eq(_S.OTHER)

                with m.Case(_S.PPPOE0):
                    with m.If(r_full & (rb[0] == 0x11) & (rb[1] == 0x00)):
                        m.d.sync += [
                            state.eq(_S.PPPOE1),
                            pppoe.eq(1),
                            pppoe_sid.eq(_be16(rb[2], rb[3])),
                        ]
                    with m.Else():
                        m.d.sync += state.eq(_S.OTHER)

                with m.Case(_S.PPPOE1):
                    proto = _be16(rb[2], rb[3])
                    m.d.sync += pppoe_len.eq(_be16(rb[0], rb[1]))
                    with m.If(r_full & (proto == 0x0021)):
                        m.d.sync += [state.eq(_S.IP4), hw.eq(0)]
                    with m.Elif(r_full & (proto == 0x0057)):
                        m.d.sync += [state.eq(_S.IP6), hw.eq(0), ipv6.eq(1)]
                    with m.Else():
                        m.d.sync += state.eq(_S.OTHER)

                with m.Case(_S.IP4):
                    m.d.sync += hw.eq(hw + 1)
                    with m.If(~r_full):
                        m.d.sync += state.eq(_S.OTHER)
                    with m.Elif(hw == 0):
                        m.d.sync += [
                            ihl.eq(rb[0][0:4]),
                            ecn.eq(rb[1][0:2]),
                            ip_len.eq(_be16(rb[2], rb[3])),
                            ip_seen.eq(rb[0][4:8] == 4),
                            ip_ok.eq((rb[0][4:8] == 4) & (rb[0][0:4] >= 5)),
                        ]
                        with m.If((rb[0][4:8] != 4) | (rb[0][0:4] < 5)):
                            m.d.sync += state.eq(_S.OTHER)
                    with m.Elif(hw == 1):
                        # MF flag or a fragment offset: a fragment.
                        m.d.sync += ip_frag.eq(rb[2][5] | (rb[2][0:5] != 0) | (rb[3] != 0))
                    with m.Elif(hw == 2):
                        m.d.sync += ip_proto.eq(rb[1])
                    with m.Elif(hw == 3):
                        m.d.sync += [src[0].eq(r_word), host.eq(host ^ host_piece(r_word))]
                    with m.Elif(hw == 4):
                        m.d.sync += dst[0].eq(r_word)
                    with m.If(r_full & (hw + 1 == ihl) & (hw >= 4)):
                        m.d.sync += [state.eq(Mux(l4_ports, _S.TCP, _S.OTHER)), hw.eq(0)]

                with m.Case(_S.IP6):
                    m.d.sync += hw.eq(hw + 1)
                    with m.If(~r_full):
                        m.d.sync += state.eq(_S.OTHER)
                    with m.Elif(hw == 0):
                        m.d.sync += [ecn.eq(rb[1][4:6]), ip_ok.eq(rb[0][4:8] == 6)]
                        with m.If(rb[0][4:8] != 6):
                            m.d.sync += state.eq(_S.OTHER)
                    with m.Elif(hw == 1):
                        m.d.sync += [ip_len.eq(_be16(rb[0], rb[1])), ip_seen.eq(1), ip_proto.eq(rb[2])]
                    with m.Elif(hw < 6):
                        m.d.sync += [src[(hw - 2)[0:2]].eq(r_word), host.eq(host ^ host_piece(r_word))]
                    with m.Else():
                        m.d.sync += dst[(hw - 6)[0:2]].eq(r_word)
                        with m.If(hw == 9):
                            m.d.sync += [state.eq(Mux(l4_ports, _S.TCP, _S.OTHER)), hw.eq(0)]

                with m.Case(_S.TCP):
                    m.d.sync += hw.eq(hw + 1)
                    with m.If(~r_full):
                        m.d.sync += state.eq(_S.OTHER)
                    with m.Elif(hw == 0):
                        # The ports of every protocol in PORT_PROTOCOLS; only
                        # TCP reads on.
                        m.d.sync += ports.eq(r_word)
                        with m.If(ip_proto != 6):
                            m.d.sync += state.eq(_S.OTHER)
                    with m.Elif(hw == 1):
                        m.d.sync += seq.eq(_be32(rb))
                    with m.Elif(hw == 2):
                        m.d.sync += ack.eq(_be32(rb))
                    with m.Elif(hw == 3):
                        m.d.sync += [
                            offflags.eq(_be16(rb[0], rb[1])),
                            doff.eq(rb[0][4:8]),
                            tcp_res.eq(rb[0][0:4]),
                            flags.eq(rb[1]),
                        ]
                        with m.If(rb[0][4:8] < 5):
                            m.d.sync += state.eq(_S.OTHER)
                    with m.Elif(hw == 4):
                        m.d.sync += state.eq(Mux(doff == 5, _S.DONE, _S.OPTS))

                with m.Case(_S.OPTS):
                    m.d.sync += hw.eq(hw + 1)
                    with m.If(~r_full):
                        m.d.sync += state.eq(_S.OTHER)
                    with m.Elif(hw + 1 == doff):
                        m.d.sync += state.eq(_S.DONE)

        # The transport header's ports are key word 10 (ackfilter.flowkey) for
        # these protocols, not in a fragment (an IPv6 extension header is
        # another next header). ip_proto is read at least two words before
        # the IP header's last (IPv4 word 2 of 5, IPv6 word 1 of 10).
        m.d.sync += l4_ports.eq(~ip_frag & Cat(*[ip_proto == p for p in PORT_PROTOCOLS]).any())

    def _checksums(self, m, s):
        """Sum the IPv4 header and the TCP checksum (pseudo-header and TCP header).

        Two 16-bit halves of each whole R word a cycle, in ones' complement
        (``ip_sum``, ``tcp_sum``); ``is_addr`` and ``in_tcp`` say which words
        count, for the segmenter's sums too.
        """
        r_valid, r_word, r_full, state, hw = s.r_valid, s.r_word, s.r_full, s.state, s.hw
        doff = s.doff

        # --- Checksums -----------------------------------------------------------
        # Ones' complement sums of 16-bit words, two per R word. The halves
        # are taken in lane order (bytes swapped against network order), which
        # a ones' complement sum tolerates: the total is swapped too, and a
        # correct header sums to 0xFFFF either way (RFC 1071 section 2 (B)).
        # Each sum is kept as 18 bits whose value is `_fold16` of them: the carry
        # out of 16 bits is added back in the next cycle.
        ip_sum  = Signal(18)                # IPv4 header
        tcp_sum = Signal(18)                # pseudo-header addresses, TCP header

        word_sum = r_word[0:16] + r_word[16:32]
        in_tcp = (state == _S.TCP) | (state == _S.OPTS)
        is_addr = (((state == _S.IP4) & ((hw == 3) | (hw == 4))) |
                   ((state == _S.IP6) & (hw >= 2) & (hw <= 9)))
        # The rest of the pseudo-header, zero + protocol 6 + TCP length, added
        # with TCP word 4: a pure ACK's TCP length is its header, 4 * doff.
        pseudo = Mux((state == _S.TCP) & (hw == 4), Cat(C(0, 8), (4 * doff + 6)[0:8]), 0)
        with m.If(r_valid & r_full):
            with m.If(state == _S.IP4):
                m.d.sync += ip_sum.eq(_fold16(ip_sum) + word_sum)
            with m.If(is_addr | in_tcp):
                m.d.sync += tcp_sum.eq(_fold16(tcp_sum) + word_sum + pseudo)
        vars(s).update(ip_sum=ip_sum, tcp_sum=tcp_sum, in_tcp=in_tcp, is_addr=is_addr)

    def _segmenter_sums(self, m, s):
        """Gather what the segmenter needs (spec section 9) and strobe its block sums.

        ``seg_sum`` over the addresses and the TCP header but the sequence
        number, the data-offset/flags word and the checksum, the payload's length and position (``pay_total``,
        ``tcp_word``, ``pay_word``), the payload's sum ``pay_sum``, and the
        16-byte block sums presented on ``sum_we``/``sum_block``/``sum_value``.
        """
        r_valid, r_word, r_full, state, hw = s.r_valid, s.r_word, s.r_full, s.state, s.hw
        ipv6, ihl, ip_len, doff, l3_off = s.ipv6, s.ihl, s.ip_len, s.doff, s.l3_off
        hdr_tail, in_tcp, is_addr = s.hdr_tail, s.in_tcp, s.is_addr

        # --- The segmenter's sums (spec section 9) -------------------------------
        # `seg_sum`: the addresses and the TCP header but the sequence number
        # (word 1), the data-offset/flags half of word 3 and the checksum half
        # of word 4 (R word halves are in lane order: [0:16] is the first two
        # bytes). The payload starts at an R word (it starts at lane 2 of a
        # frame word); `pay_left` masks the bytes after the IP packet.
        seg_sum  = Signal(18)
        pay_sum  = Signal(18)               # the payload, plus its length's share of the pseudo-header
        pay_left = Signal(16)               # payload bytes not yet summed
        pay_total = Signal(17)
        tcp_word = Signal(7)
        with m.If(ipv6):
            m.d.comb += [pay_total.eq(ip_len - 4 * doff), tcp_word.eq(l3_off[2:] + 10)]
        with m.Else():
            m.d.comb += [pay_total.eq(ip_len - 4 * ihl - 4 * doff), tcp_word.eq(l3_off[2:] + ihl)]
        skip_lo = (state == _S.TCP) & ((hw == 1) | (hw == 3) | (hw == 4))
        skip_hi = (state == _S.TCP) & (hw == 1)
        seg_word = Mux(skip_lo, 0, r_word[0:16]) + Mux(skip_hi, 0, r_word[16:32])
        with m.If(r_valid & r_full & (is_addr | in_tcp)):
            m.d.sync += [seg_sum.eq(_fold16(seg_sum) + seg_word), hdr_tail.eq(r_word[16:32])]

        enters_done = r_valid & r_full & (((state == _S.TCP) & (hw == 4) & (doff == 5)) |
                                          ((state == _S.OPTS) & (hw + 1 == doff)))
        with m.If(enters_done):
            # The payload's TCP length in the pseudo-header, in lane order.
            m.d.sync += [
                pay_left.eq(Mux(pay_total[16], 0, pay_total[0:16])),
                pay_sum.eq(Cat(pay_total[8:16], pay_total[0:8])),
                self.pay_word.eq(tcp_word + doff),
            ]
        # Block sums: four R words (16 bytes) a block.
        blk_acc  = Signal(18)
        blk_cnt  = Signal(2)
        blk_idx  = Signal(7)
        blk_we_q = Signal()
        blk_q    = Signal(18)
        blk_idx_q = Signal(7)
        in_pay = r_valid & (state == _S.DONE) & (pay_left != 0)
        n_left = pay_left
        h0 = Mux(n_left >= 2, r_word[0:16], r_word[0:8])
        h1 = Mux(n_left >= 4, r_word[16:32], Mux(n_left == 3, r_word[16:24], 0))
        h1 = Mux(n_left >= 3, h1, 0)
        pay_word_sum = Signal(17)
        m.d.comb += pay_word_sum.eq(h0 + h1)
        blk_next = _fold16(blk_acc) + pay_word_sum
        ends_blk = (blk_cnt == 3) | (pay_left <= 4)
        m.d.sync += blk_we_q.eq(0)
        with m.If(in_pay):
            m.d.sync += [
                pay_sum.eq(_fold16(pay_sum) + pay_word_sum),
                pay_left.eq(Mux(pay_left <= 4, 0, pay_left - 4)),
                blk_cnt.eq(blk_cnt + 1),
            ]
            with m.If(ends_blk):
                m.d.sync += [blk_acc.eq(0), blk_cnt.eq(0), blk_idx.eq(blk_idx + 1),
                             blk_we_q.eq(1), blk_q.eq(blk_next), blk_idx_q.eq(blk_idx)]
            with m.Else():
                m.d.sync += blk_acc.eq(blk_next)
        blk_fold1 = Signal(17)
        m.d.comb += [
            blk_fold1.eq(_fold16(blk_q)),
            self.sum_we.eq(blk_we_q),
            self.sum_block.eq(blk_idx_q),
            self.sum_value.eq(blk_fold1[0:16] + blk_fold1[16]),
        ]
        vars(s).update(
            seg_sum=seg_sum, pay_sum=pay_sum, pay_left=pay_left, pay_total=pay_total,
            tcp_word=tcp_word, blk_acc=blk_acc, blk_cnt=blk_cnt, blk_idx=blk_idx)

    def _option_walker(self, m, s):
        """Walk the TCP options, two bytes a cycle, and capture their values.

        Each options word takes two cycles (``opt_stall`` holds ``ready`` low
        for the first), each a chain of two byte steps that track the option
        phase and validity; timestamp, SACK and AccECN body bytes are captured a
        cycle later into ``ts_bytes``, ``sack_bytes`` and ``aecn_bytes``.
        """
        in_frame, r_valid, r_shown, r_full = s.in_frame, s.r_valid, s.r_shown, s.r_full
        opt_half, opt_stall, rb, state = s.opt_half, s.opt_stall, s.rb, s.state
        opt_phase, opt_left, opt_at, opt_is_ts = s.opt_phase, s.opt_left, s.opt_at, s.opt_is_ts
        opt_is_sack, opt_is_aecn, aecn_kind1 = s.opt_is_sack, s.opt_is_aecn, s.aecn_kind1
        aecn_n, has_aecn, opt_eol, opt_bad = s.aecn_n, s.has_aecn, s.opt_eol, s.opt_bad
        opt_wbad, opt_sig, has_ts, sack_n = s.opt_wbad, s.opt_sig, s.has_ts, s.sack_n
        other_opt, ts_bytes, sack_bytes = s.other_opt, s.ts_bytes, s.sack_bytes
        aecn_bytes = s.aecn_bytes

        # The option walker: two chained byte steps per cycle, two cycles per
        # options word (bytes 0-1 while the word is held, then bytes 2-3).
        # Stall only a word that is there: `ready` must not wait for `valid`.
        m.d.comb += opt_stall.eq(self.valid & (state == _S.OPTS) & in_frame & ~opt_half)
        with m.If(opt_stall):
            m.d.sync += opt_half.eq(1)
        with m.Elif(r_valid):
            m.d.sync += opt_half.eq(0)
        half_b = [Mux(opt_half, rb[2], rb[0]), Mux(opt_half, rb[3], rb[1])]
        walking = r_shown & (state == _S.OPTS) & r_full
        # Captures are registered (lane, byte, target) and written a cycle
        # later, off the walker's chain; `finalize` is at least two cycles on.
        cap_en   = [Signal(name=f"cap_en{i}") for i in range(2)]
        cap_ts   = [Signal(name=f"cap_ts{i}") for i in range(2)]
        cap_ae   = [Signal(name=f"cap_ae{i}") for i in range(2)]
        cap_at   = [Signal(8, name=f"cap_at{i}") for i in range(2)]
        cap_byte = [Signal(8, name=f"cap_byte{i}") for i in range(2)]
        m.d.sync += [c.eq(0) for c in cap_en]

        # One byte step of the walker on a state of expressions. The second
        # byte's step works on the first one's outputs, so nothing on the
        # chain is arithmetic: "the current body byte is the option's last"
        # is `left_is(1)`, a compare of a register or of a byte against a
        # constant, chosen by the previous step's phase.
        def step(st, b, i):
            # Only a walk that breaks stops it (a length below 2); a wrong
            # timestamps or SACK length makes the ACK ineligible, but the
            # segmenter still needs the rest of the walk (TCP-MD5, TCP-AO).
            frozen = st["eol"] | st["wbad"]
            at_kind = ~frozen & (st["phase"] == _OPT_KIND)
            at_len = ~frozen & (st["phase"] == _OPT_LEN)
            in_body = ~frozen & (st["phase"] == _OPT_BODY)
            starts = at_kind & (b != 0) & (b != 1)          # EOL ends, NOP is a single byte
            # RFC 2385 (TCP-MD5, kind 19), RFC 5925 (TCP-AO, kind 29): MACs over the payload.
            signs = starts & ((b == 19) | (b == 29))
            long = at_len & (b >= 2)
            sack_ok = (b == 10) | (b == 18) | (b == 26) | (b == 34)    # 1..4 blocks
            aecn_ok = (b == 2) | (b == 5) | (b == 8) | (b == 11)       # 0..3 counters
            new = {
                "eol": st["eol"] | (at_kind & (b == 0)),     # EOL: the rest is padding
                # RFC 7323 (timestamps: length 10, once), RFC 2018 (SACK: 1-4 blocks, once).
                "wbad": st["wbad"] | (at_len & (b < 2)),
                "bad": st["bad"] | (at_len & ((b < 2) |
                                              (st["is_ts"] & ((b != 10) | st["ts"])) |
                                              (st["is_sack"] & (~sack_ok | (st["sk"] != 0))) |
                                              (st["is_aec"] & (~aecn_ok | st["aec"])))),
                "ts": st["ts"] | (long & st["is_ts"]),
                # RFC 9768 (AccECN: 0-3 counters, once). A second one makes
                # the ACK ineligible, so its bytes may overwrite the first's.
                "aec": st["aec"] | (long & st["is_aec"]),
                "aec_k1": Mux(starts, b == 174, st["aec_k1"]),
                "aec_n": Mux(long & st["is_aec"], Mux(b == 11, 3, Mux(b == 8, 2, Mux(b == 5, 1, 0))),
                             st["aec_n"]),
                "sig": st["sig"] | signs,
                "sk": Mux(long & st["is_sack"] & sack_ok, (b - 2)[3:6], st["sk"]),
                "oth": st["oth"] | (long & ~st["is_ts"] & ~st["is_sack"] & ~st["is_aec"]),
                "is_ts": Mux(starts, b == 8, st["is_ts"]),
                "is_aec": Mux(starts, (b == 172) | (b == 174), st["is_aec"]),
                "is_sack": Mux(starts, b == 5, st["is_sack"]),
                "phase": Mux(starts, _OPT_LEN,
                             Mux(at_len, Mux(b == 2, _OPT_KIND, _OPT_BODY),
                                 Mux(in_body & st["left_is"](1), _OPT_KIND, st["phase"]))),
                "left": Mux(at_len, b - 2, Mux(in_body, st["left"] - 1, st["left"])),
                "left_is": lambda k: Mux(at_len, b == k + 2,
                                         Mux(in_body, st["left_is"](k + 1), st["left_is"](k))),
                "at": Mux(at_len, 0, Mux(in_body, st["at"] + 1, st["at"])),
            }
            # A timestamp, SACK or (first) AccECN body byte: stored next cycle (below).
            with m.If(in_body):
                m.d.sync += [
                    cap_en[i].eq(walking & (st["is_ts"] | st["is_sack"] | st["is_aec"])),
                    cap_ts[i].eq(st["is_ts"]),
                    cap_ae[i].eq(st["is_aec"]),
                    cap_at[i].eq(st["at"]),
                ]
            m.d.sync += cap_byte[i].eq(b)
            return new

        lane = {"eol": opt_eol, "bad": opt_bad, "wbad": opt_wbad, "sig": opt_sig, "ts": has_ts, "sk": sack_n, "oth": other_opt,
                "aec": has_aecn, "aec_k1": aecn_kind1, "aec_n": aecn_n, "is_aec": opt_is_aecn,
                "is_ts": opt_is_ts, "is_sack": opt_is_sack, "phase": opt_phase,
                "left": opt_left, "left_is": lambda k: opt_left == k, "at": opt_at}
        for i in range(2):
            lane = step(lane, half_b[i], i)

        for i in range(2):
            with m.If(cap_en[i]):
                for d in range(8):
                    with m.If(cap_ts[i] & (cap_at[i] == d)):
                        m.d.sync += ts_bytes[d].eq(cap_byte[i])
                for d in range(32):
                    with m.If(~cap_ts[i] & ~cap_ae[i] & (cap_at[i] == d)):
                        m.d.sync += sack_bytes[d].eq(cap_byte[i])
                for d in range(9):
                    with m.If(cap_ae[i] & (cap_at[i] == d)):
                        m.d.sync += aecn_bytes[d].eq(cap_byte[i])

        with m.If(walking):
            m.d.sync += [
                opt_phase.eq(lane["phase"]), opt_left.eq(lane["left"]), opt_at.eq(lane["at"]),
                opt_is_ts.eq(lane["is_ts"]), opt_is_sack.eq(lane["is_sack"]),
                opt_is_aecn.eq(lane["is_aec"]), has_aecn.eq(lane["aec"]),
                aecn_kind1.eq(lane["aec_k1"]), aecn_n.eq(lane["aec_n"]),
                opt_eol.eq(lane["eol"]), opt_bad.eq(lane["bad"]), opt_wbad.eq(lane["wbad"]), opt_sig.eq(lane["sig"]),
                has_ts.eq(lane["ts"]),
                sack_n.eq(lane["sk"]), other_opt.eq(lane["oth"]),
            ]

    def _finalize(self, m, s):
        """Classify the frame and present ``result`` with ``done``, then reset.

        Combines what the other stages gathered into the pure-ACK, eligibility
        and segmenter verdicts, the flow key and its CAM tag, registers them
        into ``result`` in the ``finalize`` cycle, and clears every header,
        option and sum register for the next frame.
        """
        finalize, nbytes, opt_half, state, ridx = s.finalize, s.nbytes, s.opt_half, s.state, s.ridx
        hw, ntags, vid, tpid, tpid_next, pppoe = s.hw, s.ntags, s.vid, s.tpid, s.tpid_next, s.pppoe
        pppoe_sid, pppoe_len, ipv6, ihl, ecn = s.pppoe_sid, s.pppoe_len, s.ipv6, s.ihl, s.ecn
        ip_len, ip_seen, ip_ok, ip_proto = s.ip_len, s.ip_seen, s.ip_ok, s.ip_proto
        ip_frag, src, host, dst, ports, ack = s.ip_frag, s.src, s.host, s.dst, s.ports, s.ack
        doff, flags, tcp_res, l3_off, ip_end = s.doff, s.flags, s.tcp_res, s.l3_off, s.ip_end
        ip_bytes, seq, offflags, hdr_tail = s.ip_bytes, s.seq, s.offflags, s.hdr_tail
        opt_phase, opt_left, opt_at, opt_is_ts = s.opt_phase, s.opt_left, s.opt_at, s.opt_is_ts
        opt_is_sack, opt_is_aecn, aecn_kind1 = s.opt_is_sack, s.opt_is_aecn, s.aecn_kind1
        aecn_n, has_aecn, opt_eol, opt_bad = s.aecn_n, s.has_aecn, s.opt_eol, s.opt_bad
        opt_wbad, opt_sig, has_ts, sack_n = s.opt_wbad, s.opt_sig, s.has_ts, s.sack_n
        other_opt, ts_bytes, sack_bytes = s.other_opt, s.ts_bytes, s.sack_bytes
        aecn_bytes, ip_sum, tcp_sum, seg_sum = s.aecn_bytes, s.ip_sum, s.tcp_sum, s.seg_sum
        pay_sum, pay_left, pay_total, tcp_word = s.pay_sum, s.pay_left, s.pay_total, s.tcp_word
        blk_acc, blk_cnt, blk_idx = s.blk_acc, s.blk_cnt, s.blk_idx

        # --- Finalize ----------------------------------------------------------
        l3_bytes = Signal(16)
        l4_len   = Signal(17)               # IP payload length
        tcp_ok   = Signal()
        opts_ok  = Signal()
        len_ok   = Signal()
        csum_ok  = Signal()
        pure_ack = Signal()
        eligible = Signal()
        m.d.comb += [
            l3_off.eq(14 + 4 * ntags + Mux(pppoe, 8, 0)),
            ip_bytes.eq(Mux(ipv6, ip_len + 40, ip_len)),
            ip_end.eq(l3_off + ip_bytes),
            # Link accounting (spec section 6): the announced IP length when the
            # packet ends inside the frame (padding is not charged), else what
            # follows the L2 header.
            l3_bytes.eq(Mux(ip_seen & (ipv6 | (ip_len >= 20)) & (ip_end <= nbytes), ip_bytes,
                            Mux(nbytes > l3_off, nbytes - l3_off, 0))),
            l4_len.eq(Mux(ipv6, ip_len, ip_len - 4 * ihl)),
            # A pure ACK: ACK set, RST SYN FIN clear (RFC 9293 section 3.1), no
            # payload, the whole IP packet in a frame that fits a slot.
            pure_ack.eq((state == _S.DONE) & ((flags & 0x17) == 0x10) & (l4_len == 4 * doff) &
                        (nbytes >= ip_end) & (nbytes <= ACK_SLOT_BYTES)),
            # Eligible: URG PSH clear too, the reserved bits clear (ECE CWR
            # AE free); well-formed options; no IPv4 options; nothing after
            # the IP packet but Ethernet padding of a minimum frame (64 bytes
            # plus its tags); the PPPoE length agrees; both checksums hold.
            tcp_ok.eq(((flags & 0x3F) == 0x10) & (tcp_res[1:4] == 0)),
            opts_ok.eq(~opt_bad & ((opt_phase == _OPT_KIND) | opt_eol)),
            len_ok.eq((nbytes == ip_end) | (nbytes <= 64 + 4 * ntags)),
            csum_ok.eq((_fold16(tcp_sum) == 0xFFFF) & (ipv6 | (_fold16(ip_sum) == 0xFFFF))),
            eligible.eq(tcp_ok & opts_ok & len_ok & csum_ok & (ipv6 | (ihl == 5)) &
                        (~pppoe | (pppoe_len == ip_bytes + 2))),
        ]

        # The segmenter may cut it (spec section 9, "Never cut", but the
        # payload's length): a TCP header read to its end, neither SYN, RST,
        # URG nor CWR, options that walk and sign nothing, lengths that hold,
        # the whole IP packet in the frame, both checksums right.
        seg_ok = Signal()
        seg_csum_ok = Signal()
        csum_total = Signal(17)
        m.d.comb += [
            csum_total.eq(_fold16(tcp_sum) + _fold16(pay_sum)),
            seg_csum_ok.eq((csum_total[0:16] + csum_total[16]) == 0xFFFF),
            seg_ok.eq((state == _S.DONE) & ((flags & 0xA6) == 0) & ~opt_sig & ~opt_wbad &
                      ((opt_phase == _OPT_KIND) | opt_eol) &
                      (ipv6 | (_fold16(ip_sum) == 0xFFFF)) & ~pay_total[16] &
                      Mux(ipv6, ip_len >= 20, ip_len >= 4 * ihl + 20) &
                      (nbytes >= ip_end) & (~pppoe | (pppoe_len == ip_bytes + 2)) & seg_csum_ok),
        ]

        key = [Signal(32, name=f"key{i}") for i in range(KEY_WORDS)]
        m.d.comb += [
            key[0].eq(Cat(vid[0], vid[1], ntags, pppoe, ipv6, tpid[0], tpid[1])),   # ackfilter.flowkey
            key[1].eq(Cat(pppoe_sid, ip_proto, ip_ok)),
            *[key[2 + i].eq(src[i]) for i in range(4)],
            *[key[6 + i].eq(dst[i]) for i in range(4)],
            key[10].eq(ports),
        ]
        # The CAM tag (``ackfilter.flowkey``): fold the key to 32 bits, then hash
        # so structured keys (neighbouring addresses and ports) spread over
        # all tags. Collisions are only a missed chance to supersede: the
        # queue manager compares full keys.
        fold = 0
        for i in range(KEY_WORDS):
            fold = fold ^ key[i].rotate_left((11 * i) % 32)
        fold_q = Signal(32)
        m.d.sync += fold_q.eq(fold)         # the key is final from the flush cycle on
        tag = Signal(16)
        m.d.comb += tag.eq(Cat(*[Cat(*[fold_q[i] for i in bits]).xor() for bits in tag_matrix()]))

        res = self.result
        m.d.sync += self.done.eq(finalize)
        with m.If(finalize):
            m.d.sync += [
                res.pure_ack.eq(pure_ack),
                res.nbytes.eq(nbytes),
                res.l3_bytes.eq(l3_bytes),
                # (model.red.ip_header: the fixed header is in the frame)
                res.ip.found.eq(ip_ok & (nbytes >= l3_off + Mux(ipv6, 40, 20))),
                res.ip.word.eq(l3_off[2:]),
                res.ip.ipv6.eq(ipv6),
                res.meta.tag.eq(tag),
                res.meta.host.eq(host),
                res.meta.ack.eq(ack),
                res.details.tsval.eq(Cat(*reversed(ts_bytes[0:4]))),
                res.details.tsecr.eq(Cat(*reversed(ts_bytes[4:8]))),
                res.meta.has_ts.eq(has_ts),
                res.meta.sack_n.eq(sack_n),
                res.meta.other_opts.eq(other_opt),
                res.meta.eligible.eq(eligible),
                res.meta.ece.eq(flags[6]),
                res.meta.cwr.eq(flags[7]),
                res.meta.ae.eq(tcp_res[0]),
                res.meta.ecn.eq(ecn),
                res.meta.accecn_opt.eq(has_aecn),
                res.seg.ok.eq(seg_ok),
                res.seg.pppoe.eq(pppoe),
                res.seg.tcp_word.eq(tcp_word),
                res.seg.pay_word.eq(self.pay_word),
                res.seg.pay_bytes.eq(pay_total),
                res.seg.seq.eq(seq),
                res.seg.offflags.eq(offflags),
                res.seg.sum.eq(Cat(_fold16(seg_sum)[0:16]) + _fold16(seg_sum)[16]),
                res.seg.hdr_tail.eq(hdr_tail),
            ]
            for i in range(KEY_WORDS):
                m.d.sync += res.key[i].eq(key[i])
            for blk in range(4):
                m.d.sync += [
                    res.details.sack[blk].start.eq(Cat(*reversed(sack_bytes[8 * blk:8 * blk + 4]))),
                    res.details.sack[blk].end.eq(Cat(*reversed(sack_bytes[8 * blk + 4:8 * blk + 8]))),
                ]
            # The AccECN counters, as model.pktparse orders them: kind 172
            # carries EE0B, ECEB, EE1B, kind 174 EE1B, ECEB, EE0B; cut short
            # from the end.
            wire = [Cat(aecn_bytes[3 * k + 2], aecn_bytes[3 * k + 1], aecn_bytes[3 * k]) for k in range(3)]
            present = [has_aecn & (aecn_n > k) for k in range(3)]
            m.d.sync += [
                res.details.accecn[0].eq(Mux(aecn_kind1, Mux(present[2], wire[2], 0), Mux(present[0], wire[0], 0))),
                res.details.accecn[1].eq(Mux(present[1], wire[1], 0)),
                res.details.accecn[2].eq(Mux(aecn_kind1, Mux(present[0], wire[0], 0), Mux(present[2], wire[2], 0))),
                res.meta.accecn_mask.eq(Cat(Mux(aecn_kind1, present[2], present[0]), present[1],
                                            Mux(aecn_kind1, present[0], present[2]))),
            ]
            with m.If(nbytes < 14):
                m.d.sync += res.cls.eq(FrameClass.RUNT)
            with m.Elif(nbytes > MAX_FRAME_BYTES):
                m.d.sync += res.cls.eq(FrameClass.OVERSIZE)
            with m.Elif(pure_ack):
                m.d.sync += res.cls.eq(FrameClass.ACK)
            with m.Else():
                m.d.sync += res.cls.eq(FrameClass.DATA)
            # Ready for the next frame (whose first word only fills `hold`).
            m.d.sync += [
                state.eq(_S.ETH), ridx.eq(0), hw.eq(0), ntags.eq(0), pppoe.eq(0),
                pppoe_sid.eq(0), pppoe_len.eq(0), ipv6.eq(0), ihl.eq(0), ecn.eq(0), ip_len.eq(0),
                ip_seen.eq(0), ip_ok.eq(0), ip_proto.eq(0), ip_frag.eq(0), ip_sum.eq(0),
                tcp_sum.eq(0), tpid_next.eq(0),
                *[s.eq(0) for s in (vid[0], vid[1], tpid[0], tpid[1], *src, *dst, host)],
                ports.eq(0), ack.eq(0), doff.eq(0), flags.eq(0), tcp_res.eq(0),
                opt_phase.eq(_OPT_KIND), opt_left.eq(0), opt_at.eq(0), opt_is_ts.eq(0),
                opt_is_sack.eq(0), opt_eol.eq(0), opt_bad.eq(0), opt_wbad.eq(0),
                opt_is_aecn.eq(0), has_aecn.eq(0), aecn_kind1.eq(0), aecn_n.eq(0),
                has_ts.eq(0), sack_n.eq(0), other_opt.eq(0), opt_half.eq(0), opt_sig.eq(0),
                seg_sum.eq(0), pay_sum.eq(0), pay_left.eq(0), blk_acc.eq(0), blk_cnt.eq(0),
                blk_idx.eq(0), seq.eq(0), offflags.eq(0), hdr_tail.eq(0),
            ]
            # ts/sack bytes need no reset: has_ts and sack_n say which are valid.
            # Zero them anyway so equal ACKs always produce equal records.
            m.d.sync += [b.eq(0) for b in (*ts_bytes, *sack_bytes, *aecn_bytes)]
