"""Command-line argument handling of ``ackfilter replay`` (no RTL needed)."""

import struct

import pytest

from ackfilter import cli


def run(argv, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    return info.value.code, capsys.readouterr().err


def pcap_header(linktype=1, magic=0xA1B2C3D4):
    return struct.pack("<IHHiIII", magic, 2, 4, 0, 0, 65535, linktype)


def pcap_record(sec, usec, data):
    return struct.pack("<IIII", sec, usec, len(data), len(data)) + data


@pytest.fixture
def eth_pcap(tmp_path):
    path = tmp_path / "in.pcap"
    frame = bytes(range(60))
    path.write_bytes(pcap_header() + pcap_record(100, 5, frame) + pcap_record(100, 25, frame))
    return path


def test_missing_input_file(tmp_path, capsys):
    code, err = run(["replay", "--in", str(tmp_path / "nope.pcap"), "--out", str(tmp_path / "o.pcap")],
                    capsys)
    assert code == 2
    assert "nope.pcap" in err and "no such file" in err


def test_not_a_capture(tmp_path, capsys):
    bad = tmp_path / "bad.pcap"
    bad.write_text("hello, I am not a capture file\n")
    code, err = run(["replay", "--in", str(bad), "--out", str(tmp_path / "o.pcap")], capsys)
    assert code == 2
    assert "bad.pcap" in err and "pcap" in err


def test_not_ethernet(tmp_path, capsys):
    raw_ip = tmp_path / "rawip.pcap"
    raw_ip.write_bytes(pcap_header(linktype=101) + pcap_record(1, 0, bytes(40)))
    code, err = run(["replay", "--in", str(raw_ip), "--out", str(tmp_path / "o.pcap")], capsys)
    assert code == 2
    assert "not Ethernet" in err and "101" in err


def test_empty_capture(tmp_path, capsys):
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(pcap_header())
    code, err = run(["replay", "--in", str(empty), "--out", str(tmp_path / "o.pcap")], capsys)
    assert code == 2
    assert "no frames" in err


@pytest.mark.parametrize("rate", ["fast", "10furlongs", "-1mbit", "1bit"])
def test_bad_rate(eth_pcap, tmp_path, capsys, rate):
    code, err = run(["replay", "--in", str(eth_pcap), "--out", str(tmp_path / "o.pcap"),
                     f"--uplink-rate={rate}"], capsys)
    assert code == 2
    assert "--uplink-rate" in err and rate in err


def test_bad_rate_lists_forms(eth_pcap, tmp_path, capsys):
    code, err = run(["replay", "--in", str(eth_pcap), "--out", str(tmp_path / "o.pcap"),
                     "--uplink-rate", "fast"], capsys)
    assert code == 2
    assert "kbit" in err and "mbit" in err


def test_bad_mode(eth_pcap, tmp_path, capsys):
    code, err = run(["replay", "--in", str(eth_pcap), "--out", str(tmp_path / "o.pcap"),
                     "--ack-filter", "bogus"], capsys)
    assert code == 2
    assert "bogus" in err and "conservative" in err and "aggressive" in err


@pytest.mark.parametrize("option, value", [
    ("--ack-slots", "0"), ("--ack-slots", "256"), ("--ack-slots", "many"),
    ("--data-share", "257"), ("--data-share", "-1"),
])
def test_bad_numbers(eth_pcap, tmp_path, capsys, option, value):
    code, err = run(["replay", "--in", str(eth_pcap), "--out", str(tmp_path / "o.pcap"),
                     f"{option}={value}"], capsys)
    assert code == 2
    assert option in err


def test_missing_out(eth_pcap, capsys):
    code, err = run(["replay", "--in", str(eth_pcap)], capsys)
    assert code == 2
    assert "--out" in err


def test_no_command(capsys):
    code, err = run([], capsys)
    assert code == 2


def test_unknown_option(eth_pcap, tmp_path, capsys):
    code, err = run(["replay", "--in", str(eth_pcap), "--out", str(tmp_path / "o.pcap"),
                     "--frobnicate"], capsys)
    assert code == 2
    assert "--frobnicate" in err


def test_pcap_round_trip(tmp_path):
    """read_pcap gives nanoseconds; write_pcap writes a nanosecond pcap."""
    path = tmp_path / "in.pcap"
    path.write_bytes(pcap_header() + pcap_record(100, 5, b"a" * 60) + pcap_record(101, 7, b"b" * 61))
    frames = cli.read_pcap(str(path))
    assert frames == [(100_000_005_000, b"a" * 60), (101_000_007_000, b"b" * 61)]
    out = tmp_path / "out.pcap"
    cli.write_pcap(str(out), [(t + 3, d) for t, d in frames])
    assert cli.read_pcap(str(out)) == [(100_000_005_003, b"a" * 60), (101_000_007_003, b"b" * 61)]
    from scapy.utils import rdpcap
    pkts = rdpcap(str(out))
    assert len(pkts) == 2 and bytes(pkts[1]) == b"b" * 61


def test_pcapng_input(tmp_path):
    from scapy.layers.l2 import Ether
    from scapy.utils import PcapNgWriter
    path = tmp_path / "in.pcapng"
    pkt = Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01", type=0x0800) / (b"\0" * 46)
    pkt.time = 1000.25
    with PcapNgWriter(str(path)) as w:
        w.write(pkt)
    frames = cli.read_pcap(str(path))
    assert frames == [(1_000_250_000_000, bytes(pkt))]
