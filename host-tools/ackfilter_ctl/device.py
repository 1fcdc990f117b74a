"""The firmware's line protocol, as a Python object.

The firmware answers each command line with zero or more output lines and
one status line, ``ok`` or ``error: <message>``, then prints the prompt
``> `` (no newline). :class:`Device` turns the echo off, checks that the
firmware speaks this tool's register map, and gives each command's output
lines or raises :class:`DeviceError` with the firmware's message.
"""

import re
import time

from .link import LinkError
from .regmap import SUPPORTED_REGMAP_VERSION

__all__ = ["Device", "DeviceError", "DeviceTimeout", "VersionMismatch"]

PROMPT = "> "


class DeviceError(RuntimeError):
    """The firmware answered ``error: ...``."""


class DeviceTimeout(TimeoutError):
    """No complete answer in time."""


class VersionMismatch(RuntimeError):
    """The firmware speaks another register map."""


_PROMPTS = re.compile(r"^(?:\s*>(?:\s|$))+")


def _strip_prompts(line):
    """The line without the prompts before it (``> ``, repeated, or with a
    space of a prompt the previous connection did not read, `` > ok``)."""
    return _PROMPTS.sub("", line).strip()


class Device:
    """A board (or simulated SoC) behind ``link``.

    ``timeout``: seconds to wait for a command's status line (the simulated
    SoC is slower than a board)."""

    def __init__(self, link, *, timeout=3.0):
        self.link = link
        self.timeout = timeout
        self._buf = b""
        self.warnings = []
        self.version = {}

    # --- lines -------------------------------------------------------------

    def _line(self, deadline):
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._buf += self.link.read(min(left, 0.5))
        raw, self._buf = self._buf.split(b"\n", 1)
        return _strip_prompts(raw.decode("utf-8", "replace").rstrip("\r"))

    def command(self, line, *, timeout=None):
        """Send ``line``; its output lines. ``DeviceError`` on ``error: ...``."""
        if "\n" in line or "\r" in line:
            raise ValueError("one command line at a time")
        self.link.write(line.encode() + b"\n")
        deadline = time.monotonic() + (timeout or self.timeout)
        out = []
        while True:
            got = self._line(deadline)
            if got is None:
                raise DeviceTimeout(f"{self.link.name}: no answer to {line!r} in "
                                    f"{timeout or self.timeout:g} s (is it an ackfilter? "
                                    "wrong port or baud rate?)")
            if got == "ok":
                return out
            if got.startswith("error: "):
                raise DeviceError(got[len("error: "):])
            if got.startswith("warning: "):
                self.warnings.append(got[len("warning: "):])
            if got:
                out.append(got)

    # --- session -----------------------------------------------------------

    def open(self):
        """Find the prompt, turn the echo off, check the version."""
        # A half-typed line may be waiting: an empty line ends it (its answer,
        # if any, is read and dropped with the echo's).
        self.link.write(b"\n")
        self.command("echo off")
        self._drain()
        self.version = self.read_version()
        theirs = self.version.get("regmap")
        if theirs != str(SUPPORTED_REGMAP_VERSION):
            raise VersionMismatch(
                f"the firmware speaks register map {theirs} (firmware {self.version.get('firmware')}), "
                f"this ackfilter-ctl speaks {SUPPORTED_REGMAP_VERSION}: install the ackfilter-ctl "
                "that came with the board's gateware")
        return self

    def _drain(self, quiet=0.2):
        """Drop what arrives until the line is quiet (the empty line's answer)."""
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline and self.link.read(quiet):
            pass
        self._buf = b""

    def read_version(self):
        return dict(_pair(line) for line in self.command("version"))

    def get_all(self):
        return {k: int(v, 0) for k, v in map(_pair, self.command("get"))}

    def get(self, name):
        k, v = _pair(self.command(f"get {name}")[0])
        return int(v, 0)

    def set(self, name, value):
        out = self.command(f"set {name} {value}")
        return int(_pair(out[0])[1], 0)

    def listing(self):
        rows = []
        for line in self.command("list"):
            name, value, lo, hi, default, *unit = line.split()
            rows.append({"name": name, "value": int(value, 0), "min": int(lo, 0),
                         "max": int(hi, 0), "default": int(default, 0), "unit": " ".join(unit)})
        return rows

    def stats(self):
        return {k: int(v, 0) for k, v in map(_pair, self.command("stats"))}

    def close(self):
        try:
            self.link.close()
        except (OSError, LinkError):
            pass


def _pair(line):
    key, sep, value = line.partition(" ")
    if not sep:
        raise DeviceError(f"unexpected answer line {line!r}")
    return key, value.strip()
