"""The simulated SoC: the control plane's CPU running the real firmware with
the uplink core, in Verilator, its UART on a TCP port (``make sim-soc``).

    python -m ackfilter.sim.socsim [--port 2323] [--flash FILE]

``ackfilter-ctl --connect localhost:2323`` then talks to the firmware as to
a board. Frames reach the datapath on the next port (``--port`` + 1): see
``sim/soc/harness.cpp`` for the record format, :class:`SimSoC` for the
Python side. Building takes a few minutes the first time (the firmware, the
Verilog, the Verilator model); the result is cached under ``build/socsim/``
by the hash of everything it is made from.
"""

import argparse
import hashlib
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .replay import HARNESS_HEADERS
from ..paths import REPO_ROOT, build_dir, file_lock
from ..soc.memmap import FLASH_PARAMS_OFFSET, FLASH_PARAMS_SECTORS, FLASH_SECTOR_BYTES
from .verilog import HARNESS_FLAGS, build_executable, rtl_digest

__all__ = ["SimSoC", "SoCSimError", "build", "build_firmware", "main", "upgrade_flash_file", "HARNESS_CPP"]

HARNESS_CPP = REPO_ROOT / "sim" / "soc" / "harness.cpp"
#: The SPI flash model the harness shares with fwhost (C, built beside it).
FLASH_C = REPO_ROOT / "sim" / "common" / "spi_flash.c"
FLASH_H = REPO_ROOT / "sim" / "common" / "spi_flash.h"
DEFAULT_PORT = 2323
#: The harness's exit status after a flash protocol error (sim/soc/harness.cpp).
FLASH_ERROR_EXIT = 3
#: What a --flash file holds: the parameter sectors (spi_flash.h).
FLASH_BYTES = FLASH_PARAMS_SECTORS * FLASH_SECTOR_BYTES
#: What it held before the model was shared with fwhost: the whole chip.
_WHOLE_CHIP_BYTES = 4 << 20


def upgrade_flash_file(path, progress=print):
    """A --flash file of the whole 4 MiB chip (what the model kept before it
    kept only the parameter sectors) becomes its parameter sectors, so the
    settings saved in it are kept; any other file is left alone."""
    path = Path(path)
    if path.is_file() and path.stat().st_size == _WHOLE_CHIP_BYTES:
        with path.open("rb") as f:
            f.seek(FLASH_PARAMS_OFFSET)
            sectors = f.read(FLASH_BYTES)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(sectors)
        tmp.replace(path)
        progress(f"sim-soc: {path}: kept its parameter sectors ({FLASH_BYTES} bytes at "
                 f"{FLASH_PARAMS_OFFSET:#x}) of the whole chip it held")

#: The model's own Verilator options (with ``verilog.HARNESS_FLAGS``): SERV's
#: Verilog drives some signals from more than one block.
_FLAGS = ("-Wno-MULTIDRIVEN",)
_TOP = "soc_top"


class SoCSimError(RuntimeError):
    """Building or running the simulated SoC failed."""


def build_firmware():
    """``firmware/build/firmware.bin``, built when its sources changed."""
    from ..firmware import FirmwareError, build_firmware as make
    try:
        return make()
    except FirmwareError as e:
        raise SoCSimError(str(e)) from None


def _generate_verilog(path, firmware):
    from amaranth.back import verilog
    from ..soc.cpu import serv_sources
    from ..soc.sim_top import SoCSimTop
    text = verilog.convert(SoCSimTop(firmware=firmware), name="soc_top", emit_src=False)
    path.write_text(text)
    return [path.name] + [name for name, _ in serv_sources()]


def build(progress=print):
    """Path of the harness binary for the current firmware and RTL (built when
    not cached; ``progress`` gets a line per step)."""
    image = build_firmware().read_bytes()
    from ..soc.cpu import serv_sources
    serv = serv_sources()
    h = hashlib.sha256()
    for part in (image, rtl_digest().encode(), HARNESS_CPP.read_bytes(),
                 *(header.read_bytes() for header in HARNESS_HEADERS),
                 FLASH_C.read_bytes(), FLASH_H.read_bytes(),
                 " ".join((*HARNESS_FLAGS, *_FLAGS, _TOP)).encode(),
                 *(t.encode() for _, t in serv)):
        h.update(part)
        h.update(b"\0")
    key = h.hexdigest()[:16]
    final = build_dir() / "socsim" / key
    binary = final / "soc_sim"
    if binary.exists():
        return binary
    final.parent.mkdir(parents=True, exist_ok=True)
    # One build per model: a parallel caller (another pytest-xdist worker)
    # waits for it instead of compiling the same model beside it.
    with file_lock(final.parent / f".{key}.lock"):
        if not binary.exists():
            _build(key, final, image, serv, progress)
    return binary


def _build(key, final, image, serv, progress):
    progress("sim-soc: generating the Verilog (SoC with its firmware + uplink core) ...")
    with tempfile.TemporaryDirectory() as tmp:
        verilog_file = Path(tmp) / "soc_top.v"
        sources = _generate_verilog(verilog_file, image)
        files = {verilog_file.name: verilog_file.read_bytes(),
                 **{name: text.encode() for name, text in serv},
                 "harness.cpp": HARNESS_CPP.read_bytes(),
                 **{header.name: header.read_bytes() for header in HARNESS_HEADERS},
                 **{f.name: f.read_bytes() for f in (FLASH_C, FLASH_H)}}
    progress("sim-soc: building the Verilator model (a few minutes) ...")
    t0 = time.monotonic()
    build_executable(final, "soc_sim", files, [*sources, "harness.cpp", FLASH_C.name], top=_TOP,
                     flags=_FLAGS, error=SoCSimError)
    progress(f"sim-soc: built in {time.monotonic() - t0:.0f} s")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SimSoC:
    """The simulated SoC as a context manager (tests)::

        with SimSoC(flash=tmp / "flash.bin") as soc:
            # soc.uart_port: for ackfilter-ctl --connect 127.0.0.1:PORT
            soc.send_frames([frame, ...])
            out = soc.receive_frames(n, timeout=60)      # [(cycle, bytes)]
    """

    def __init__(self, *, port=None, flash=None, binary=None, log_uart=None):
        self.log_uart = log_uart
        self.port = port or _free_port()
        self.frames_port = _free_port()
        self.flash = flash
        self.binary = binary
        self.proc = None
        self._fsock = None
        self._fbuf = b""

    def __enter__(self):
        binary = self.binary or build(progress=lambda s: print(s, file=sys.stderr))
        cmd = [str(binary), "--port", str(self.port), "--frames-port", str(self.frames_port)]
        if self.flash:
            cmd += ["--flash", str(self.flash)]
        if self.log_uart:
            cmd += ["--log-uart"]
        self._err = open(self.log_uart, "w") if self.log_uart else subprocess.DEVNULL
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._err, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening"):
            self.close()
            raise SoCSimError(f"the simulated SoC did not start: {line.strip()} (exit "
                              f"{self.proc.returncode})")
        return self

    def __exit__(self, exc_type, *exc):
        self.close()
        # (The harness ends with status 3 when the flash model saw a
        # protocol error from the firmware's driver, each reported on its
        # stderr: a session that ran into one fails here.)
        if exc_type is None and self.proc and self.proc.returncode == FLASH_ERROR_EXIT:
            raise SoCSimError("the simulated SoC's flash saw protocol errors from the firmware "
                              "(exit 3; SimSoC(log_uart=FILE) keeps the harness's messages)")

    def close(self):
        if self._fsock:
            self._fsock.close()
            self._fsock = None
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def _frames(self):
        if self._fsock is None:
            self._fsock = socket.create_connection(("127.0.0.1", self.frames_port), timeout=10)
        return self._fsock

    def send_frames(self, frames):
        s = self._frames()
        s.sendall(b"".join(struct.pack("<I", len(f)) + bytes(f) for f in frames))

    def receive_frames(self, n, timeout=60.0):
        """The next ``n`` frames the core sent: ``[(start_cycle, bytes)]``
        (fewer if ``timeout`` seconds pass first)."""
        s = self._frames()
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < n:
            while len(self._fbuf) >= 12:
                cycle, length = struct.unpack_from("<QI", self._fbuf)
                if len(self._fbuf) < 12 + length:
                    break
                out.append((cycle, self._fbuf[12:12 + length]))
                self._fbuf = self._fbuf[12 + length:]
                if len(out) == n:
                    return out
            left = deadline - time.monotonic()
            if left <= 0:
                break
            s.settimeout(min(left, 1.0))
            try:
                data = s.recv(65536)
            except socket.timeout:
                continue
            if not data:
                raise SoCSimError("the simulated SoC closed the frames connection")
            self._fbuf += data
        return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m ackfilter.sim.socsim",
                                 description="Run the simulated SoC (CPU + firmware + uplink core) "
                                             "and serve its UART on a TCP port.")
    ap.add_argument("--port", type=int, default=int(os.environ.get("PORT") or DEFAULT_PORT),
                    help=f"the UART's TCP port (default {DEFAULT_PORT}, or $PORT); frames on port + 1")
    ap.add_argument("--flash", default=str(build_dir() / "socsim" / "flash.bin"),
                    help=f"the SPI flash's parameter sectors ({FLASH_BYTES} bytes, or absent: erased), "
                         "kept across runs (default build/socsim/flash.bin)")
    ap.add_argument("--max-seconds", type=float, default=0, help="stop after this long (0: never)")
    args = ap.parse_args(argv)
    if not 0 < args.port < 65535:
        ap.error(f"--port must be 1..65534, not {args.port}")
    try:
        binary = build()
    except SoCSimError as e:
        print(f"sim-soc: error: {e}", file=sys.stderr)
        return 1
    Path(args.flash).parent.mkdir(parents=True, exist_ok=True)
    upgrade_flash_file(args.flash)
    print(f"sim-soc: UART on localhost:{args.port} (ackfilter-ctl --connect localhost:{args.port}), "
          f"frames on {args.port + 1}, flash {args.flash}; Ctrl-C stops", flush=True)
    cmd = [str(binary), "--port", str(args.port), "--frames-port", str(args.port + 1),
           "--flash", args.flash]
    if args.max_seconds:
        cmd += ["--max-seconds", str(args.max_seconds)]
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
