"""The whole control plane in simulation: SERV running the real firmware with
the uplink core in Verilator (``make sim-soc``), driven by ``ackfilter-ctl``
over TCP exactly as a board over its UART.

Checked against independent expectations: the firmware's replies against
the register map's ranges; the shaper's spacing of the frames the core
sends against the rate the tool set (its charge: the frame plus the
Ethernet wire's 24 bytes, at the cycles per byte written); the counters the
tool reads against the frames and bytes sent; parameters saved to the
simulated SPI flash against a restart of the SoC on the same flash.
"""

import json
import sys
import time

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from ackfilter import params as P
from ackfilter.paths import REPO_ROOT
from ackfilter.sim.socsim import FLASH_BYTES, FLASH_ERROR_EXIT, SimSoC, SoCSimError, build, upgrade_flash_file
from ackfilter.soc.memmap import FLASH_PARAMS_OFFSET

sys.path.insert(0, str(REPO_ROOT / "host-tools"))
from ackfilter_ctl import cli  # noqa: E402

#: Seconds an answer may take: a guard against a hang, not a speed
#: expectation (every answer returns as soon as it comes). The simulated CPU
#: runs at about 1/70 of the board's speed, and a restart that reads saved
#: settings from the simulated flash took over 60 s at half speed beside a
#: bitstream build (the fresh-clone CI check), 34 s alone on this machine.
TIMEOUT = "600"

#: On one pytest worker (``--dist loadgroup``): the model is built once,
#: under a lock, and a second worker only waited for it (43 s of a core at
#: half speed in the CI rehearsal of a35a16d), where it could run others.
pytestmark = pytest.mark.xdist_group("socsim")


@pytest.fixture(scope="module")
def binary():
    return build(progress=lambda s: print(s, file=sys.stderr))


def ctl(capsys, soc, *argv):
    rc = cli.main(["--connect", f"127.0.0.1:{soc.port}", "--timeout", TIMEOUT, *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def frames(n, size):
    f = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") /
              IP(src="192.0.2.1", dst="198.51.100.1") / UDP(sport=5000, dport=5001) /
              bytes(size - 42))
    assert len(f) == size
    return [f] * n


def test_the_tool_talks_to_the_firmware_and_values_are_checked(binary, tmp_path, capsys):
    with SimSoC(binary=binary, flash=tmp_path / "flash.bin") as soc:
        rc, out, err = ctl(capsys, soc, "--json", "status")
        assert rc == 0, err
        doc = json.loads(out)
        assert doc["version"]["regmap"] == "1" and doc["version"]["gateware_id"] == f"{P.ID_VALUE:#x}"
        # The core's data path, read through the firmware: the flow queues.
        assert doc["stats"]["info.data_queues"] == doc["stats"]["info.flow_entries"] + 1 > 1
        assert doc["params"] == {**{p.name: p.default for p in P.PARAMS},
                                 **{f.name: f.default for f in P.FIRMWARE_PARAMS}}
        rc, out, err = ctl(capsys, soc, "set", "red_min_bytes", "3000", "red_max_bytes", "9000",
                           "ack_mode", "conservative")
        assert rc == 0 and "red_max_bytes 9000" in out, err
        rc, out, err = ctl(capsys, soc, "--json", "get", "red_min_bytes", "red_max_bytes", "ack_mode")
        assert rc == 0, err
        assert json.loads(out) == {"red_min_bytes": 3000, "red_max_bytes": 9000, "ack_mode": 1}
        # the tool refuses before sending; the firmware refuses on its own too
        rc, out, err = ctl(capsys, soc, "set", "red_max_p", "65537")
        assert rc == 2 and "allowed 0 .. 65536" in err
        from ackfilter_ctl.device import Device, DeviceError
        from ackfilter_ctl.link import TcpLink
        dev = Device(TcpLink("127.0.0.1", soc.port), timeout=float(TIMEOUT)).open()
        try:
            with pytest.raises(DeviceError, match=r"red_max_p must be 0\.\.65536 1/65536, not 65537"):
                dev.set("red_max_p", 65537)
            with pytest.raises(DeviceError, match="no parameter 'nope'"):
                dev.get("nope")
            assert dev.get("red_max_p") == 6554                  # unchanged
            # this SoC has no board registers: no MDIO, said as such
            with pytest.raises(DeviceError, match=r"no MDIO in this build"):
                dev.command("mdio 0 2")
        finally:
            dev.close()


def test_the_datapath_obeys_the_rate_and_the_counters_match_the_traffic(binary, capsys):
    rate_bps = 8_000_000
    cpb = P.cpb_q16_for_rate(rate_bps)
    sent = frames(12, 1000)
    with SimSoC(binary=binary) as soc:
        rc, out, err = ctl(capsys, soc, "set", "shaper_cpb_q16", str(cpb), "shaper_burst_bytes", "0")
        assert rc == 0, err
        rc, out, err = ctl(capsys, soc, "reset-counters")
        assert rc == 0, err
        soc.send_frames(sent)
        got = soc.receive_frames(len(sent), timeout=float(TIMEOUT))
        assert [f for _c, f in got] == sent
        gaps = [b[0] - a[0] for a, b in zip(got, got[1:])]
        want = (1000 + 24) * cpb / 65536                          # cycles per frame at the rate
        assert all(abs(g - want) <= 0.01 * want for g in gaps[1:]), (gaps, want)
        rc, out, err = ctl(capsys, soc, "--json", "status")
        stats = json.loads(out)["stats"]
        assert stats["frames_in"] == stats["frames_out"] == len(sent)
        assert stats["bytes_in"] == stats["bytes_out"] == sum(map(len, sent))
        assert json.loads(out)["shaper_rate_bps"] == pytest.approx(rate_bps, rel=1e-6)


def test_saved_parameters_survive_a_restart_on_the_same_flash(binary, tmp_path, capsys):
    flash = tmp_path / "flash.bin"
    with SimSoC(binary=binary, flash=flash) as soc:
        rc, out, err = ctl(capsys, soc, "set", "chunk_bytes", "512", "ared_interval_ms", "2000")
        assert rc == 0, err
        rc, out, err = ctl(capsys, soc, "save")
        assert rc == 0 and "saved" in out, err
    with SimSoC(binary=binary, flash=flash) as soc:
        rc, out, err = ctl(capsys, soc, "--json", "get", "chunk_bytes", "ared_interval_ms", "ack_mode")
        assert rc == 0, err
        assert json.loads(out) == {"chunk_bytes": 512, "ared_interval_ms": 2000,
                                   "ack_mode": P.param("ack_mode").default}


def test_adaptive_red_raises_max_p_while_the_queue_holds_red_above_its_band(binary):
    """Adaptive RED on SERV, under traffic: RED on (min 2000, max 6000 bytes,
    w_q = 1/2, so the average follows the queue closely), the shaper nearly
    shut (10 kb/s: a 1000-byte frame takes 0.8 s) so the data queue stays,
    ten 1000-byte frames sent. RED's average then sits above the band's top
    (min + 0.6 (max - min) = 4400 bytes), and every ared_interval_ms (100)
    the firmware raises red_max_p by min(max_p / 4, 1 %) (Floyd, Gummadi and
    Shenker 2001, Figure 3; in 1/65536: 6554 -> 7209 -> 7864 ...)."""
    from ackfilter_ctl.device import Device
    from ackfilter_ctl.link import TcpLink
    with SimSoC(binary=binary) as soc:
        dev = Device(TcpLink("127.0.0.1", soc.port), timeout=float(TIMEOUT)).open()
        try:
            for name, value in (("shaper_cpb_q16", P.cpb_q16_for_rate(10_000)), ("shaper_burst_bytes", 0),
                                ("red_min_bytes", 2000), ("red_max_bytes", 6000), ("red_wq_shift", 1),
                                ("ared_interval_ms", 100), ("red_enable", 1)):
                dev.set(name, value)
            assert dev.get("ared_enable") == 1 and dev.get("red_max_p") == 6554
            soc.send_frames(frames(10, 1000))
            seen = []
            for _ in range(60):
                stats = dev.stats()
                seen.append((stats["info.red_avg_bytes"], stats["ared_adjustments"]))
                if seen[-1][1] >= 2:
                    break
            dev.set("ared_enable", 0)                # no step between the two reads below
            stats = dev.stats()
            avg, steps, max_p = stats["info.red_avg_bytes"], stats["ared_adjustments"], dev.get("red_max_p")
            assert avg > 4400, seen
            assert steps >= 2, seen
            # Each step adds min(max_p // 4, 655): from 6554, 655 a step up to 65536 // 2.
            want = 6554
            for _ in range(steps):
                want += min(want // 4, 655)
            assert max_p == want, seen
            # Nothing left the queue meanwhile: the shaper holds it, RED only drops arrivals.
            assert stats["frames_out"] <= 1, stats
        finally:
            dev.close()


def test_a_hung_firmware_is_restarted_and_the_datapath_runs_on(binary, tmp_path):
    """`hang` stops the firmware; the watchdog restarts SERV (the simulation's
    watchdog is 168 ms of its clock); frames sent meanwhile come out; the
    restarted firmware keeps the live (unsaved) register and counts the
    restart."""
    from ackfilter_ctl.device import Device
    from ackfilter_ctl.link import TcpLink
    with SimSoC(binary=binary, flash=tmp_path / "flash.bin") as soc:
        dev = Device(TcpLink("127.0.0.1", soc.port), timeout=float(TIMEOUT)).open()
        assert dev.set("ack_mode", 1) == 1 and dev.set("data_share", 77) == 77
        dev.link.write(b"hang\n")
        sent = frames(8, 300)
        soc.send_frames(sent)
        got = soc.receive_frames(len(sent), timeout=float(TIMEOUT))
        assert [f for _, f in got] == sent
        seen = b""
        deadline = time.monotonic() + float(TIMEOUT)
        while b"ackfilter firmware" not in seen or not seen.endswith(b"> "):
            assert time.monotonic() < deadline, seen
            seen += dev.link.read(1.0)
        assert b"hanging: the watchdog restarts the firmware" in seen
        assert b"warning: the watchdog restarted the firmware (1 since power-on)" in seen
        dev = Device(dev.link, timeout=float(TIMEOUT)).open()
        assert dev.get("ack_mode") == 1 and dev.get("data_share") == 77
        assert dev.stats()["watchdog_restarts"] == 1
        assert dict(line.split(" ", 1) for line in dev.command("settings"))["source"] == "kept"


def test_a_whole_chip_flash_file_keeps_its_saved_parameter_sectors(tmp_path):
    """The model once kept the whole 4 MiB chip in its --flash file; such a
    file becomes its parameter sectors, byte for byte, and nothing else is
    touched."""
    chip = bytearray(b"\xff" * (4 << 20))
    saved = bytes(range(256)) * (FLASH_BYTES // 256)
    chip[FLASH_PARAMS_OFFSET:FLASH_PARAMS_OFFSET + FLASH_BYTES] = saved
    old = tmp_path / "flash.bin"
    old.write_bytes(chip)
    upgrade_flash_file(old, progress=lambda s: None)
    assert old.read_bytes() == saved
    upgrade_flash_file(old, progress=lambda s: None)            # already the sectors: left alone
    assert old.read_bytes() == saved
    odd = tmp_path / "other.bin"
    odd.write_bytes(b"\x00" * 100)
    upgrade_flash_file(odd, progress=lambda s: None)
    assert odd.read_bytes() == b"\x00" * 100
    upgrade_flash_file(tmp_path / "absent.bin", progress=lambda s: None)
    assert not (tmp_path / "absent.bin").exists()


@pytest.mark.parametrize("status", [0, FLASH_ERROR_EXIT])
def test_a_session_fails_when_the_harness_reports_flash_protocol_errors(tmp_path, status):
    """The harness ends with FLASH_ERROR_EXIT after a flash protocol error;
    a session that ends so fails, one that ends with 0 does not (a stand-in
    for the harness: it listens, and exits with `status` on SIGTERM)."""
    fake = tmp_path / "soc_sim"
    fake.write_text(f"#!/bin/sh\ntrap 'exit {status}' TERM\necho listening uart frames\n"
                    "while :; do sleep 0.05; done\n")
    fake.chmod(0o755)
    soc = SimSoC(binary=fake)
    if status:
        with pytest.raises(SoCSimError, match="protocol errors"):
            with soc:
                pass
    else:
        with soc:
            pass
