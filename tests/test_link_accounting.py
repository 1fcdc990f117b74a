"""Link accounting: the bytes a frame is charged, against tc-cake.

The expectations are worked out by hand from tc-cake(8)'s definitions (each
keyword's overhead, mpu and atm/ptm; atm = 48-byte cells of 53 bytes, ptm =
one byte per 64 or part thereof), not from the model, so a CAKE user's SQM
numbers must give these charges here. The RTL is checked against the model
in tests/test_blocks_sim.py and end to end in tests/test_replay.py.
"""

import re
from pathlib import Path

import pytest

from ackfilter import params as P
from ackfilter.sim import traces
from ackfilter.model.cake import CAKE_KEYWORDS, CakeError, cake_accounting, keyword_summary
from ackfilter.model.pktparse import ip_packet_length
from ackfilter.model.shaper import GcraShaper, LinkAccounting, charged_bytes, gcra_departures

SPEC = Path(__file__).resolve().parents[1] / "docs" / "spec.md"

ACK_IP = 40         # a pure IPv4 ACK without options: IP 20 + TCP 20
ACK_FRAME = 54      # ... in an Ethernet frame (14 + 40), 60 once padded


@pytest.mark.parametrize("words, ip_bytes, frame_bytes, charged", [
    # docsis = overhead 18 mpu 64 noatm: 40 + 18 = 58 < 64 -> 64
    ("docsis", ACK_IP, ACK_FRAME, 64),
    # docsis, a full-size packet: 1500 + 18 = 1518 (the Ethernet frame with FCS)
    ("docsis", 1500, 1514, 1518),
    # pppoe-ptm = overhead 30 ptm: 40 + 30 = 70; 70 / 64 -> 2 more bytes = 72
    ("pppoe-ptm", ACK_IP, ACK_FRAME, 72),
    # pppoe-ptm: 1500 + 30 = 1530; 1530 / 64 = 23.9 -> 24 more = 1554
    ("pppoe-ptm", 1500, 1514, 1554),
    # bridged-ptm = overhead 22 ptm: 1522 + 24 (1522 / 64 = 23.8) = 1546
    ("bridged-ptm", 1500, 1514, 1546),
    # pppoa-vcmux = overhead 10 atm: 50 bytes -> 2 cells of 53 = 106
    ("pppoa-vcmux", ACK_IP, ACK_FRAME, 106),
    # pppoa-vcmux: 1510 bytes -> 32 cells (31.5) = 1696
    ("pppoa-vcmux", 1500, 1514, 1696),
    # pppoe-llcsnap = overhead 40 atm: 1540 -> 33 cells (32.1) = 1749
    ("pppoe-llcsnap", 1500, 1514, 1749),
    # ipoa-vcmux = overhead 8 atm: 48 bytes fit one cell exactly = 53
    ("ipoa-vcmux", ACK_IP, ACK_FRAME, 53),
    # conservative = overhead 48 atm: 88 -> 2 cells = 106
    ("conservative", ACK_IP, ACK_FRAME, 106),
    # ethernet = overhead 38 mpu 84: 1500 + 38 = 1538 (14 + 4 + 8 + 12 on the wire)
    ("ethernet", 1500, 1514, 1538),
    # ethernet: 40 + 38 = 78 < 84 (the minimum frame 64 + preamble 8 + IFG 12)
    ("ethernet", ACK_IP, ACK_FRAME, 84),
    # ethernet ether-vlan: 1500 + 38 + 4 = 1542
    ("ethernet ether-vlan", 1500, 1518, 1542),
    # a negative overhead: 40 - 20 = 20
    ("overhead -20", ACK_IP, ACK_FRAME, 20),
    # raw (tc-cake's default): the frame as Linux reports it, nothing added
    ("raw", ACK_IP, ACK_FRAME, 54),
    ("", 1500, 1514, 1514),
    # mpu without an overhead word applies to the frame: max(54, 64) = 64
    ("mpu 64", ACK_IP, ACK_FRAME, 64),
    # atm without an overhead word cuts the frame into cells: 54 -> 2 cells = 106
    ("atm", ACK_IP, ACK_FRAME, 106),
    # words after raw are relative to the frame: 1514 + 8 = 1522 -> 32 cells = 1696
    ("raw ipoa-vcmux", 1500, 1514, 1696),
])
def test_cake_words_charge_what_tc_cake_charges(words, ip_bytes, frame_bytes, charged):
    acc = cake_accounting(words)
    assert acc.charged_bytes(frame_bytes, ip_bytes) == charged


@pytest.mark.parametrize("words, expected", [
    # q_cake.c reads the words left to right: `overhead N` sets, keywords add
    ("docsis overhead 10", LinkAccounting(charge_base="ip", overhead_bytes=10, mpu_bytes=64)),
    ("overhead 10 docsis", LinkAccounting(charge_base="ip", overhead_bytes=28, mpu_bytes=64)),
    ("pppoe-ptm ether-vlan", LinkAccounting(charge_base="ip", overhead_bytes=34, link_layer="ptm")),
    ("bridged-ptm ether-vlan ether-vlan", LinkAccounting(charge_base="ip", overhead_bytes=30, link_layer="ptm")),
    # conservative sets 48 (it does not add)
    ("ether-vlan conservative", LinkAccounting(charge_base="ip", overhead_bytes=48, link_layer="atm")),
    # the last link layer word wins; docsis says noatm
    ("pppoa-vcmux docsis", LinkAccounting(charge_base="ip", overhead_bytes=28, mpu_bytes=64)),
    ("docsis atm", LinkAccounting(charge_base="ip", overhead_bytes=18, mpu_bytes=64, link_layer="atm")),
    # q_cake.c's ethernet keeps the link layer (the man page says noatm)
    ("atm ethernet", LinkAccounting(charge_base="ip", overhead_bytes=38, mpu_bytes=84, link_layer="atm")),
    # mpu is set, the last one wins
    ("ethernet mpu 0", LinkAccounting(charge_base="ip", overhead_bytes=38, mpu_bytes=0)),
    ("mpu 100 docsis", LinkAccounting(charge_base="ip", overhead_bytes=18, mpu_bytes=64)),
    # raw anywhere makes the charge relative to the frame
    ("raw overhead 10", LinkAccounting(charge_base="frame", overhead_bytes=10)),
    ("overhead 10 raw", LinkAccounting(charge_base="frame", overhead_bytes=0)),
    ("via-ethernet", LinkAccounting(charge_base="frame", overhead_bytes=0)),
    ("", LinkAccounting(charge_base="frame", overhead_bytes=0)),
])
def test_cake_words_combine_as_tc_reads_them(words, expected):
    assert cake_accounting(words) == expected
    assert cake_accounting(*words.split()) == expected


@pytest.mark.parametrize("words, message", [
    ("overhead 257", "valid range is -64 to 256"),
    ("overhead -65", "valid range is -64 to 256"),
    ("mpu 257", "valid range is 0 to 256"),
    ("mpu -1", "valid range is 0 to 256"),
    ("overhead", "needs a number"),
    ("overhead ten", "'ten': not an integer"),
    ("dsl", "unknown tc-cake link word 'dsl'"),
    ("overhead 256 ether-vlan", "overhead 260 is outside"),
])
def test_cake_words_tc_refuses_are_errors(words, message):
    with pytest.raises(CakeError, match=re.escape(message)):
        cake_accounting(words)


def test_the_default_is_the_ethernet_wire_on_the_frame_as_stored():
    acc = LinkAccounting()
    assert acc.registers() == {name: P.param(name).default for name in acc.registers()}
    assert (acc.charge_base, acc.overhead_bytes, acc.mpu_bytes, acc.link_layer) == ("frame", 24, 0, "none")
    # preamble 8 + FCS 4 + IFG 12 on top of the stored frame (padding included)
    assert acc.charged_bytes(60) == 84 and acc.charged_bytes(1514) == 1538


def test_a_negative_sum_is_charged_the_mpu_not_a_wrapped_length():
    # The kernel's u32 arithmetic wraps 40 - 64 to 2^32 - 24 (sch_cake.c,
    # cake_calc_overhead); the shaper charges max(sum, mpu) instead.
    assert charged_bytes(54, 40, charge_base="ip", overhead_bytes=-64) == 0
    assert charged_bytes(54, 40, charge_base="ip", overhead_bytes=-64, mpu_bytes=20) == 20
    assert charged_bytes(54, 40, charge_base="ip", overhead_bytes=-64, link_layer="atm") == 0
    assert charged_bytes(54, 40, charge_base="ip", overhead_bytes=-64, link_layer="ptm") == 0
    # the mpu comes before the cells: max(40 - 30, 50) = 50 -> 2 cells
    assert charged_bytes(54, 40, charge_base="ip", overhead_bytes=-30, mpu_bytes=50, link_layer="atm") == 106


def test_padding_is_not_charged_on_the_ip_base():
    flow = traces.Flow(src="10.0.0.2", dst="203.0.113.5", sport=5000, dport=80)
    ack = traces.tcp_frame(flow, ack=1000, flags="A")
    assert len(ack) == 60 and ip_packet_length(ack) == ACK_IP      # padded by 6 bytes
    assert cake_accounting("docsis").charge(ack) == 64
    assert cake_accounting("pppoe-ptm").charge(ack) == 72
    assert cake_accounting("raw").charge(ack) == 60                  # the frame as stored
    assert LinkAccounting().charge(ack) == 84


@pytest.mark.parametrize("kwargs, error", [
    ({"charge_base": "l3"}, ValueError),
    ({"link_layer": "vdsl"}, ValueError),
    ({"overhead_bytes": 257}, ValueError),
    ({"overhead_bytes": -65}, ValueError),
    ({"mpu_bytes": -1}, ValueError),
    ({"mpu_bytes": 1.5}, TypeError),
    ({"overhead_bytes": True}, TypeError),
])
def test_link_accounting_validates_its_arguments(kwargs, error):
    with pytest.raises(error, match=next(iter(kwargs))):
        LinkAccounting(**kwargs)


def test_the_ip_base_needs_the_ip_length():
    with pytest.raises(ValueError, match="ip_bytes"):
        LinkAccounting(charge_base="ip").charged_bytes(1514)


def test_gcra_charges_the_link_accounting():
    # 1 byte per cycle (cpb 1.0), no burst: each start is the previous one's
    # charged bytes later. docsis: 40-byte ACKs cost 64, 1500-byte packets 1518.
    flow = traces.Flow(src="10.0.0.2", dst="203.0.113.5", sport=5000, dport=80)
    ack = traces.tcp_frame(flow, ack=1000, flags="A")
    data = traces.tcp_frame(flow, seq=1, ack=1, flags="A", payload=bytes(1460))
    starts = gcra_departures([ack, data, ack, ack], [0, 0, 0, 0], cpb_q16=65536, burst_bytes=0,
                             accounting=cake_accounting("docsis"))
    assert starts == [0, 64, 64 + 1518, 64 + 1518 + 64]
    # the default: the frame + 24
    assert gcra_departures([60, 1514], [0, 0], cpb_q16=65536, burst_bytes=0) == [0, 84]
    with pytest.raises(TypeError, match="not both"):
        GcraShaper(cpb_q16=1, overhead_bytes=24, accounting=LinkAccounting())


def _spec_keyword_table():
    """``{keyword: (overhead, mpu, link)}`` from the table in docs/spec.md section 6."""
    text = SPEC.read_text()
    section = text[text.index("## 6."):text.index("## 7.")]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"^\| `([a-z-]+)` \| (.*?) \| (.*?) \| (.*?) \| (.*?) \|$", line)
        if m:
            rows[m.group(1)] = tuple(c.strip() for c in m.groups()[1:4])
    return rows


def test_the_spec_lists_every_keyword_with_its_numbers():
    # One definition (ackfilter.model.cake.CAKE_KEYWORDS); the spec's table is checked against it.
    rows = _spec_keyword_table()
    assert list(rows) == [k.name for k in CAKE_KEYWORDS]
    for kw in CAKE_KEYWORDS:
        overhead = ("" if kw.overhead_value is None else f"{kw.overhead_value}") + \
                   (f"+{kw.overhead_add}" if kw.overhead_add else "")
        if kw.raw:
            overhead += " (frame)"
        mpu = "" if kw.mpu is None else str(kw.mpu)
        link = {None: "", "none": "noatm", "atm": "atm", "ptm": "ptm"}[kw.link_layer]
        assert rows[kw.name] == (overhead or "-", mpu or "-", link or "-"), (kw.name, keyword_summary(kw))


def test_the_replay_doc_names_the_presets_the_table_has():
    doc = (SPEC.parent / "replay.md").read_text()
    section = doc[doc.index("### Link accounting"):]
    listed = section[section.index("`--link-preset` ("):section.index("--help` lists")]
    names = re.findall(r"`([a-z][a-z-]+)`", listed)
    presets = [k.name for k in CAKE_KEYWORDS if k.name not in ("atm", "ptm", "noatm", "via-ethernet")]
    assert sorted(names) == sorted(presets)
