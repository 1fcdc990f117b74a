"""Command-line argument handling of ``ackfilter replay`` (no RTL needed)."""

import struct

import pytest

from ackfilter import cli, params
from ackfilter.units import format_rate
from ackfilter.sim import pcap


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
    frames = pcap.read_pcap(str(path))
    assert frames == [(100_000_005_000, b"a" * 60), (101_000_007_000, b"b" * 61)]
    out = tmp_path / "out.pcap"
    pcap.write_pcap(str(out), [(t + 3, d) for t, d in frames])
    assert pcap.read_pcap(str(out)) == [(100_000_005_003, b"a" * 60), (101_000_007_003, b"b" * 61)]
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
    frames = pcap.read_pcap(str(path))
    assert frames == [(1_000_250_000_000, bytes(pkt))]


# --- the uplink rate ------------------------------------------------------------

@pytest.mark.parametrize("rate, says", [
    ("1e400mbit", "more than the shaper can express"),      # was an OverflowError traceback
    ("40tbit", "more than the shaper can express"),
    ("0.4bit", "rounds to 0 bit/s"),                        # was silently unshaped
    ("1e-400mbit", "rounds to 0 bit/s"),
    ("5kbit", "less than the shaper can express"),
    ("nan", "expected"),
    ("inf", "expected"),
])
def test_a_rate_the_shaper_cannot_take_is_an_error_naming_it_and_the_range(eth_pcap, tmp_path, capsys,
                                                                            rate, says):
    code, err = run(["replay", "--in", str(eth_pcap), "--out", str(tmp_path / "o.pcap"),
                     f"--uplink-rate={rate}"], capsys)
    assert code == 2
    assert "--uplink-rate" in err and repr(rate) in err and says in err
    lo, hi = params.rate_limits_bps()             # 6.104kbit .. 26.21tbit at 50 MHz
    assert f"{format_rate(lo)} .. {format_rate(hi)}" in err and "unshaped" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("text", ["0", "0kbit", "0.0mbit", "unshaped", "UNSHAPED"])
def test_only_zero_or_unshaped_means_unshaped(text):
    assert cli._rate(text) == 0


def test_the_python_api_takes_the_same_rates():
    lo, hi = params.rate_limits_bps()             # 6104 .. 26214400000000 at 50 MHz
    for bad in (0.4, float("inf"), float("nan"), -1, 10**30):
        with pytest.raises(ValueError, match=f"{lo} .. {hi} bit/s"):
            params.cpb_q16_for_rate(bad)
    with pytest.raises(TypeError):
        params.cpb_q16_for_rate("1mbit")
    # 10 Mb/s: 8 * F_SYS_HZ / 1e7 cycles per byte, a whole number (40 at 50 MHz), in Q16.
    assert 8 * params.F_SYS_HZ % 10_000_000 == 0
    assert params.cpb_q16_for_rate(0) == 0
    assert params.cpb_q16_for_rate(10_000_000) == (8 * params.F_SYS_HZ // 10_000_000) << 16


# --- truncated captures ----------------------------------------------------------

def _three_frame_pcap():
    return (pcap_header() + pcap_record(1, 0, b"a" * 60) + pcap_record(1, 10, b"b" * 70)
            + pcap_record(1, 20, b"c" * 80))


@pytest.mark.parametrize("cut, where", [
    (24 + 76 + 86 + 10, "inside the header of record 3 (10 of 16 bytes)"),
    (24 + 76 + 86 + 16 + 30, "inside the data of record 3 (30 of 80 bytes)"),
    (24 + 76 + 5, "inside the header of record 2 (5 of 16 bytes)"),
])
def test_a_pcap_cut_short_replays_its_whole_frames_and_says_so(tmp_path, capsys, cut, where):
    path = tmp_path / "cut.pcap"
    path.write_bytes(_three_frame_pcap()[:cut])
    frames = pcap.read_pcap(str(path))
    err = capsys.readouterr().err
    whole = [b"a" * 60, b"b" * 70][:2 if "record 3" in where else 1]
    assert [d for _t, d in frames] == whole
    assert "truncated" in err and where in err and f"the {len(whole)} whole frames" in err
    assert "snap" not in err                      # not blamed on the snap length


def test_a_pcapng_cut_short_replays_its_whole_frames_and_says_so(tmp_path, capsys):
    from scapy.layers.l2 import Ether
    from scapy.utils import PcapNgWriter
    path = tmp_path / "in.pcapng"
    pkts = []
    for k in range(3):
        pkt = Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01", type=0x0800) / (bytes([k]) * 46)
        pkt.time = 1000 + k
        pkts.append(pkt)
    for n in (2, 3):
        with PcapNgWriter(str(path)) as w:
            for pkt in pkts[:n]:
                w.write(pkt)
        if n == 2:
            whole_two = len(path.read_bytes())
    data = path.read_bytes()
    assert len(pcap.read_pcap(str(path))) == 3
    # inside the last block's header, its data, its trailing length
    for cut in (whole_two + 5, whole_two + 40, len(data) - 1):
        path.write_bytes(data[:cut])
        frames = pcap.read_pcap(str(path))
        err = capsys.readouterr().err
        assert [d for _t, d in frames] == [bytes(p) for p in pkts[:2]], cut
        assert "truncated" in err and "block" in err and "the 2 whole frames" in err


def test_a_frame_cut_at_the_snap_length_is_still_blamed_on_the_snap_length(tmp_path, capsys):
    path = tmp_path / "snap.pcap"
    rec = struct.pack("<IIII", 1, 0, 60, 1514) + bytes(60)
    path.write_bytes(pcap_header() + rec)
    assert len(pcap.read_pcap(str(path))) == 1
    err = capsys.readouterr().err
    assert "snap length" in err and "truncated" not in err


def test_a_corrupt_record_length_is_an_error(tmp_path):
    path = tmp_path / "bad.pcap"
    path.write_bytes(pcap_header() + struct.pack("<IIII", 1, 0, 10**9, 10**9) + bytes(64))
    with pytest.raises(pcap.PcapError, match="corrupt"):
        pcap.read_pcap(str(path))


def test_a_gzipped_pcap_is_read(tmp_path):
    import gzip
    path = tmp_path / "in.pcap.gz"
    path.write_bytes(gzip.compress(_three_frame_pcap()))
    assert [len(d) for _t, d in pcap.read_pcap(str(path))] == [60, 70, 80]


# --- what the replay command says before it runs -------------------------------

class FakeReplay:
    """Stands in for ``ackfilter.sim.replay.replay`` (no RTL): records its
    arguments and what had been printed on stderr when it was called."""

    def __init__(self, capsys):
        self.capsys = capsys
        self.calls = []
        self.err_before = ""

    def __call__(self, in_frames, **kwargs):
        from ackfilter import params
        from ackfilter.sim.replay import ReplayResult
        self.err_before = self.capsys.readouterr().err
        self.calls.append(kwargs)
        counters = {c.name: 0 for c in params.COUNTERS}
        counters["frames_in"] = counters["frames_out"] = len(in_frames)
        return ReplayResult(frames_out=list(in_frames), events=[], counters=counters,
                            info={name: 0 for name in params.INFO}, cycles=1, wallclock_s=0.0,
                            params={p.name: p.default for p in params.PARAMS},
                            out_cycles=list(range(len(in_frames))),
                            messages=["warning: a message from the run"])


@pytest.fixture
def fake_replay(monkeypatch, capsys):
    from ackfilter.sim import replay as rp
    fake = FakeReplay(capsys)
    monkeypatch.setattr(rp, "replay", fake)
    monkeypatch.setattr(rp, "build_needed", lambda elab=None: False, raising=False)
    return fake


def run_replay(argv, fake, capsys):
    code = cli.main(argv)
    return code, fake.err_before + capsys.readouterr().err


def test_oversize_frames_and_out_of_order_times_get_one_warning_each(tmp_path, capsys, fake_replay):
    path = tmp_path / "odd.pcap"
    recs = [pcap_record(10, 0, bytes(60)), pcap_record(10, 500, bytes(9000)),   # jumbo / TSO
            pcap_record(10, 400, bytes(64000)),                                  # GRO, earlier
            pcap_record(10, 600, bytes(60)), pcap_record(9, 0, bytes(60))]       # a second back
    path.write_bytes(pcap_header() + b"".join(recs))
    code, err = run_replay(["replay", "--in", str(path), "--out", str(tmp_path / "o.pcap"), "-q"],
                           fake_replay, capsys)
    assert code == 0
    before = fake_replay.err_before
    assert before.count("longer than the core's maximum") == 1
    assert "2 of 5 frames are longer than the core's maximum of 2048 bytes (the longest 64000)" in before
    assert "ethtool -K" in before and "offload" in before
    assert before.count("earlier than the frame before them") == 1
    assert "2 frames have a timestamp earlier" in before and "by up to 1000.600 ms" in before
    assert "file order" in before
    assert err.count("longer than the core's maximum") == 1       # not repeated after the run


def test_warnings_stay_quiet_for_an_ordinary_capture(eth_pcap, tmp_path, capsys, fake_replay):
    code, err = run_replay(["replay", "--in", str(eth_pcap), "--out", str(tmp_path / "o.pcap"), "-q"],
                           fake_replay, capsys)
    assert code == 0
    assert "longer than" not in err and "earlier than" not in err and "note:" not in err


def test_ack_slots_above_the_built_size_announce_the_rebuild_first(eth_pcap, tmp_path, capsys,
                                                                  fake_replay, monkeypatch):
    from ackfilter.sim import replay as rp
    asked = []
    monkeypatch.setattr(rp, "build_needed", lambda elab=None: asked.append(dict(elab)) or True)
    code, err = run_replay(["replay", "--in", str(eth_pcap), "--out", str(tmp_path / "o.pcap"),
                            "--ack-slots", "200", "-q"], fake_replay, capsys)
    assert code == 0
    assert asked == [{"ack_slots": 200}]
    note = fake_replay.err_before
    assert f"--ack-slots 200 is more than the {params.ACK_SLOTS} ACK slots" in note
    assert "minutes" in note and "Verilator" in note and f"--ack-slots {params.ACK_SLOTS} or less" in note
    assert "cached" in note


def test_fifo_replays_the_core_with_one_data_fifo_and_says_so(eth_pcap, tmp_path, capsys,
                                                                fake_replay, monkeypatch):
    from ackfilter.sim import replay as rp
    asked = []
    monkeypatch.setattr(rp, "build_needed", lambda elab=None: asked.append(dict(elab)) or False)
    for argv, elab, says in ((["--fifo"], {"flow_queues": 0}, "data in one FIFO"),
                             ([], {}, "data in per-flow queues")):
        asked.clear()
        code, _err = run_replay(["replay", "--in", str(eth_pcap), "--out", str(tmp_path / "o.pcap"),
                                 *argv], fake_replay, capsys)
        assert code == 0 and asked == [elab]
        assert fake_replay.calls[-1]["elab"] == elab
        assert says in fake_replay.err_before


def test_ack_slots_within_the_built_size_or_cached_say_nothing(eth_pcap, tmp_path, capsys,
                                                              fake_replay, monkeypatch):
    from ackfilter.sim import replay as rp
    for slots, needed in ((str(params.ACK_SLOTS), True), ("200", False)):
        monkeypatch.setattr(rp, "build_needed", lambda elab=None, needed=needed: needed)
        code, err = run_replay(["replay", "--in", str(eth_pcap), "--out", str(tmp_path / "o.pcap"),
                                "--ack-slots", slots, "-q"], fake_replay, capsys)
        assert code == 0 and "note:" not in err


def test_build_needed_is_true_in_an_empty_build_dir(tmp_path, monkeypatch):
    from ackfilter.sim import replay as rp
    monkeypatch.setenv("ACKFILTER_BUILD_DIR", str(tmp_path))
    assert rp.build_needed({}) and rp.build_needed({"ack_slots": 200})


# --- link accounting options ---------------------------------------------------

@pytest.mark.parametrize("options, expected", [
    ([], None),
    (["--link-preset", "docsis"], ("ip", 18, 64, "none")),
    (["--link-preset", "docsis", "--overhead", "10"], ("ip", 10, 64, "none")),
    (["--overhead", "10", "--link-preset", "ether-vlan"], ("ip", 14, 0, "none")),
    (["--link-preset", "pppoe-ptm", "--link-preset", "ether-vlan"], ("ip", 34, 0, "ptm")),
    (["--overhead", "-20", "--mpu", "64", "--atm"], ("ip", -20, 64, "atm")),
    (["--overhead=-64"], ("ip", -64, 0, "none")),
    (["--link-preset", "conservative", "--noatm"], ("ip", 48, 0, "none")),
    (["--mpu", "64"], ("frame", 0, 64, "none")),
    (["--ptm"], ("frame", 0, 0, "ptm")),
    (["--link-preset", "raw", "--overhead", "4"], ("frame", 4, 0, "none")),
])
def test_link_options_reach_the_replay_as_tc_reads_them(eth_pcap, tmp_path, capsys, fake_replay,
                                                        options, expected):
    code, err = run_replay(["replay", "--in", str(eth_pcap), "--out", str(tmp_path / "o.pcap"),
                            "--stats", str(tmp_path / "s.json")] + options, fake_replay, capsys)
    assert code == 0, err
    acc = fake_replay.calls[0]["accounting"]
    if expected is None:
        assert acc is None
        assert "frame + 24 (the Ethernet wire, the default)" in err
    else:
        assert (acc.charge_base, acc.overhead_bytes, acc.mpu_bytes, acc.link_layer) == expected
        assert "tc-cake:" in err


@pytest.mark.parametrize("options, says", [
    (["--overhead", "257"], "valid range is -64 to 256"),
    (["--overhead", "-65"], "valid range is -64 to 256"),
    (["--mpu", "300"], "valid range is 0 to 256"),
    (["--overhead", "ten"], "not an integer"),
    (["--link-preset", "adsl"], "invalid choice: 'adsl'"),
    (["--overhead", "256", "--link-preset", "ether-vlan"], "overhead 260 is outside"),
])
def test_bad_link_options_are_errors(eth_pcap, tmp_path, capsys, options, says):
    code, err = run(["replay", "--in", str(eth_pcap), "--out", str(tmp_path / "o.pcap")] + options,
                    capsys)
    assert code == 2 and says in err


def test_help_lists_every_preset_with_its_numbers_citing_tc_cake(capsys):
    from ackfilter.model.cake import CAKE_KEYWORDS, keyword_summary
    code, out = None, None
    with pytest.raises(SystemExit) as info:
        cli.main(["replay", "--help"])
    out = capsys.readouterr().out
    assert info.value.code == 0
    assert "tc-cake(8)" in out and "frame as stored + 24 bytes" in out
    for kw in CAKE_KEYWORDS:
        if kw.name not in ("atm", "ptm", "noatm"):
            assert f"  {kw.name:<16} {keyword_summary(kw)}\n" in out
    for option in ("--overhead", "--mpu", "--atm", "--ptm", "--link-preset"):
        assert option in out


@pytest.mark.parametrize("value, why", [
    ("4500:13500", "MIN_BYTES:MAX_BYTES:MAX_P or 'off'"),
    ("a:13500:0.1", "whole numbers of bytes"),
    ("4500:13500:x", "MAX_P must be a probability"),
    ("4500:13500:70000", "up to 65536"),
    ("4500:13500:1.5", "up to 65536"),
    ("13500:4500:0.1", "MIN_BYTES must be below MAX_BYTES"),
    ("0:2000000:0.1", "red_max_bytes must be 1..1048575"),
])
def test_bad_red_settings_are_refused_with_the_reason(eth_pcap, tmp_path, capsys, value, why):
    code, err = run(["replay", "--in", str(eth_pcap), "--out", str(tmp_path / "o.pcap"),
                     f"--red={value}"], capsys)
    assert code == 2 and "--red" in err and why in err, err


def test_red_setting_becomes_the_registers_with_the_idle_decay_of_the_uplink(eth_pcap, tmp_path, capsys,
                                                                             fake_replay):
    code, err = run_replay(["replay", "--in", str(eth_pcap), "--out", str(tmp_path / "o.pcap"),
                            "--uplink-rate", "1mbit", "--red", "4500:13500:0.1"], fake_replay, capsys)
    assert code == 0, err
    # 0.1 * 65536 = 6553.6 -> 6554; a 500-byte packet at 1 Mb/s is 250000 cycles: 2^18
    assert fake_replay.calls[0]["csr"] == {"red_enable": 1, "red_min_bytes": 4500,
                                           "red_max_bytes": 13500, "red_max_p": 6554,
                                           "red_idle_shift": 18}
    assert "RED 4500..13500 bytes, max_p 6554/65536" in err
    code, err = run_replay(["replay", "--in", str(eth_pcap), "--out", str(tmp_path / "o.pcap"),
                            "--red", "off"], fake_replay, capsys)
    assert code == 0 and fake_replay.calls[1]["csr"] == {} and "RED off" in err
