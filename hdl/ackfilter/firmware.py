"""The control plane's firmware as the gateware needs it: ``make -C
firmware`` under a lock, and the image the SoC's RAM starts with
(``firmware/build/firmware.bin``). The SoC's hardware description
(:class:`ackfilter.soc.soc.SoC`) takes the image's bytes and knows nothing of
how they are built."""

import os
import subprocess
from pathlib import Path

from .paths import REPO_ROOT, build_dir, file_lock

__all__ = ["FIRMWARE_DIR", "FIRMWARE_BIN", "FirmwareError", "make_firmware", "build_firmware", "firmware_image"]

FIRMWARE_DIR = REPO_ROOT / "firmware"
FIRMWARE_BIN = FIRMWARE_DIR / "build" / "firmware.bin"


class FirmwareError(RuntimeError):
    """The firmware could not be built or read."""


def make_firmware(*targets):
    """``make -C firmware TARGETS...`` under a lock shared by every process of
    this checkout (pytest-xdist workers), so no one runs a file another is
    still writing. Returns the ``CompletedProcess``."""
    # Not the variables of a make that runs us (`make bitstream BOARD=...`
    # passes BOARD down through MAKEFLAGS): the firmware's make has its own.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    with file_lock(build_dir() / "firmware.lock"):
        return subprocess.run(["make", "-s", "-C", str(FIRMWARE_DIR), *targets],
                              capture_output=True, text=True, env=env)


def build_firmware():
    """``make -C firmware`` (it rebuilds only what changed); the image's path."""
    proc = make_firmware()
    if proc.returncode != 0:
        raise FirmwareError(f"`make -C firmware` failed:\n{(proc.stdout + proc.stderr)[-3000:]}")
    if not FIRMWARE_BIN.is_file():
        raise FirmwareError(f"`make -C firmware` made no {FIRMWARE_BIN}")
    return FIRMWARE_BIN


def firmware_image(path=FIRMWARE_BIN):
    """The firmware image's bytes; a clear error when it has not been built."""
    path = Path(path)
    if not path.is_file():
        raise FirmwareError(f"no firmware image at {path}: run `make firmware`")
    return path.read_bytes()
