"""The firmware's line protocol, as a Python object.

The firmware answers each command line with zero or more output lines and
one status line, ``ok`` or ``error: <message>``, then prints the prompt
``> `` (no newline). :class:`Device` opens a session (it discards whatever
line is half-typed on the board, turns the echo off and checks that the
firmware speaks this tool's register map) and checks every reply against
the one the protocol promises (firmware/README.md, "Commands").

Every failure is a :class:`DeviceError` whose message names the device, the
command and the line at fault: :class:`FirmwareError` when the firmware
answered ``error: ...``, :class:`BadReply` when the reply is not the one
promised (a missing or unparsable value, another parameter's name, too few
lines), :class:`ReadBackMismatch` when ``set`` reads back another value than
it wrote, :class:`DeviceTimeout` when no complete reply came in time.
"""

import re
import time

from .link import LinkError
from .regmap import SUPPORTED_REGMAP_VERSION

__all__ = ["Device", "DeviceError", "FirmwareError", "BadReply", "ReadBackMismatch", "DeviceTimeout",
           "VersionMismatch", "DISCARD_LINE", "OVERRUN", "FLASH_TIMEOUT_S"]

PROMPT = "> "
#: Sent first on opening: Ctrl-U (NAK), on which the firmware discards the
#: line typed so far, runs nothing and prints nothing. (A newline would run
#: whatever half-typed line the board holds.)
DISCARD_LINE = b"\x15"
#: The firmware's message for a line it lost bytes of to a UART receive
#: overrun; the command is sent once more (every command is idempotent).
OVERRUN = "uart overrun, line discarded"
#: Seconds ``save`` and ``load`` may take at least (a flash sector erase, and
#: the firmware's own flash timeout of 1000 ms, on a slow SoC).
FLASH_TIMEOUT_S = 10.0


class DeviceError(RuntimeError):
    """The device failed a command (the message says which, and how)."""


class FirmwareError(DeviceError):
    """The firmware answered ``error: <message>`` (:attr:`message`)."""

    def __init__(self, text, message):
        super().__init__(text)
        self.message = message


class BadReply(DeviceError):
    """A reply that is not the one the protocol promises for the command."""


class ReadBackMismatch(DeviceError):
    """``set`` read back another value than it wrote."""


class DeviceTimeout(DeviceError, TimeoutError):
    """No complete answer in time."""


class VersionMismatch(RuntimeError):
    """The firmware speaks another register map."""


_PROMPTS = re.compile(r"^(?:\s*>(?:\s|$))+")
_INT_PAIR = re.compile(r"(\S+) (-?[0-9]+)")


def _strip_prompts(line):
    """The line without the prompts before it (``> ``, repeated, or with a
    space of a prompt the previous connection did not read, `` > ok``)."""
    return _PROMPTS.sub("", line).strip()


def _some(names, shown=3):
    names = list(names)
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


class Device:
    """A board (or simulated SoC) behind ``link``.

    ``timeout``: seconds to wait for a command's status line (the simulated
    SoC is slower than a board). ``regmap``: the tool's register map; with
    it, ``get`` must name every parameter and no other, and ``stats`` every
    counter (without it only the form of each line is checked)."""

    def __init__(self, link, *, timeout=3.0, regmap=None):
        self.link = link
        self.timeout = timeout
        self.regmap = regmap
        self._buf = b""
        self.warnings = []
        self.version = {}

    # --- lines -------------------------------------------------------------

    def _line(self, deadline):
        """The next line, or None at the deadline (what arrived stays in the buffer)."""
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._buf += self.link.read(min(left, 0.5))
        raw, self._buf = self._buf.split(b"\n", 1)
        return _strip_prompts(raw.decode("utf-8", "replace").rstrip("\r"))

    def command(self, line, *, timeout=None):
        """Send ``line``; its output lines (``warning: ...`` lines go to
        :attr:`warnings` instead). A line the firmware lost to a receive
        overrun is sent once more; ``FirmwareError`` on ``error: ...``."""
        if any(c in line for c in "\r\n\x15"):
            raise ValueError("one command line at a time")
        try:
            return self._exchange(line, timeout)
        except FirmwareError as e:
            if e.message != OVERRUN:
                raise
        try:
            return self._exchange(line, timeout)
        except FirmwareError as e:
            if e.message == OVERRUN:
                raise FirmwareError(f"{self.link.name}: {line!r} failed twice: {OVERRUN} (a noisy "
                                    "serial line, or another program writing to the port?)",
                                    e.message) from None
            raise

    def _exchange(self, line, timeout):
        self.link.write(line.encode() + b"\n")
        wait = timeout or self.timeout
        deadline = time.monotonic() + wait
        out = []
        while True:
            got = self._line(deadline) if time.monotonic() < deadline else None
            if got is None:
                raise self._timeout(line, wait, out)
            if got == "ok":
                return out
            if got.startswith("error: "):
                message = got[len("error: "):]
                raise FirmwareError(f"{self.link.name}: {line!r} failed: {message}", message)
            if got.startswith("warning: "):
                self.warnings.append(got[len("warning: "):])
            elif got:
                out.append(got)

    def _timeout(self, line, wait, out):
        partial = _strip_prompts(self._buf.decode("utf-8", "replace"))
        if not out and not partial:
            return DeviceTimeout(f"{self.link.name}: no answer to {line!r} in {wait:g} s (is it an "
                                 "ackfilter? wrong port or baud rate?)")
        where = (f"in the middle of the line {partial!r}" if partial else
                 f"after the line {out[-1]!r}, with no status line ('ok' or 'error: ...')")
        return DeviceTimeout(f"{self.link.name}: no complete answer to {line!r} in {wait:g} s: "
                             f"it stopped {where}")

    def _bad(self, command, line, expected):
        shown = "only 'ok'" if line is None else repr(line)
        return BadReply(f"{self.link.name}: unexpected reply to {command!r}: {shown} (expected {expected})")

    # --- session -----------------------------------------------------------

    def open(self):
        """Discard a half-typed line, turn the echo off, check the version."""
        self.link.write(DISCARD_LINE)
        self.command("echo off")
        self._drain()
        self.version = self.read_version()
        theirs = self.version["regmap"]
        if theirs != str(SUPPORTED_REGMAP_VERSION):
            raise VersionMismatch(
                f"the firmware speaks register map {theirs} (firmware {self.version.get('firmware')}), "
                f"this ackfilter-ctl speaks {SUPPORTED_REGMAP_VERSION}: install the ackfilter-ctl "
                "that came with the board's gateware")
        return self

    def _drain(self, quiet=0.2):
        """Drop what arrives until the line is quiet (the rest of a reply a
        previous session left unread, whose ``ok`` the echo took)."""
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline and self.link.read(quiet):
            pass
        self._buf = b""

    # --- commands ------------------------------------------------------------

    def read_version(self):
        """``{key: value}`` of ``version``; it must give ``regmap``."""
        out = self.command("version")
        version = {}
        for line in out:
            key, sep, value = line.partition(" ")
            if not sep or not value.strip():
                raise self._bad("version", line, "'KEY VALUE' lines")
            version[key] = value.strip()
        if "regmap" not in version:
            raise self._bad("version", out[-1] if out else None, "a line 'regmap N'")
        return version

    def _int_pair(self, command, line, expected="'NAME NUMBER' lines"):
        m = _INT_PAIR.fullmatch(line)
        if not m:
            raise self._bad(command, line, expected)
        return m.group(1), int(m.group(2))

    def _values(self, command, *, required=(), known=None, what="name"):
        """``{name: int}`` of a reply of ``NAME NUMBER`` lines that has a line
        for each of ``required`` (``what`` they are) and, if ``known`` is
        given, for no name outside it."""
        lines = self.command(command)
        values = {}
        for line in lines:
            name, value = self._int_pair(command, line)
            if name in values:
                raise self._bad(command, line, "each name once")
            if known is not None and name not in known:
                raise self._bad(command, line, f"a line for every {what} of the register map, "
                                               "and no other")
            values[name] = value
        missing = [n for n in required if n not in values]
        if missing:
            raise self._bad(command, lines[-1] if lines else None,
                            f"a line for every {what}; none for {_some(missing)}")
        return values

    def _one(self, command, name):
        """The value of the one line ``NAME NUMBER`` that ``command`` answers."""
        lines = self.command(command)
        expected = f"one line '{name} NUMBER'"
        if len(lines) != 1:
            raise self._bad(command, lines[1] if lines else None, expected)
        got, value = self._int_pair(command, lines[0], expected)
        if got != name:
            raise self._bad(command, lines[0], expected)
        return value

    def get_all(self):
        names = [p["name"] for p in self.regmap.all_params] if self.regmap else ()
        return self._values("get", required=names, known=set(names) if self.regmap else None,
                            what="parameter")

    def get(self, name):
        return self._one(f"get {name}", name)

    def set(self, name, value):
        """Write ``value``; the value read back, which must be ``value``."""
        value = int(value)
        got = self._one(f"set {name} {value}", name)
        if got != value:
            raise ReadBackMismatch(f"{self.link.name}: the device set {name} to {value}, read back {got}")
        return got

    def stats(self):
        """Counters, info words, ``uptime_ms``...: every counter of the
        register map and ``uptime_ms`` must be there."""
        counters = [c["name"] for c in self.regmap.counters] if self.regmap else []
        return self._values("stats", required=counters + ["uptime_ms"], what="counter and uptime_ms")

    def settings(self):
        """Where the live parameters came from (firmware/README.md,
        ``settings``): ``{"source": "flash" | "defaults" | "kept", ...,
        "saved": bool}``; ``record``, ``sector`` and ``record_regmap`` as
        numbers with ``source`` flash, ``reason`` otherwise."""
        expected = "'source flash|defaults|kept', its details, then 'saved yes|no'"
        lines = self.command("settings")
        out = {}
        for line in lines:
            key, _, value = line.partition(" ")
            if not value or key in out:
                raise self._bad("settings", line, expected)
            out[key] = value
        source, saved = out.get("source"), out.get("saved")
        need = {"flash": ("record", "sector", "record_regmap")}.get(source, ("reason",))
        if source not in ("flash", "defaults", "kept") or saved not in ("yes", "no") or \
                set(out) != {"source", "saved", *need}:
            raise self._bad("settings", " / ".join(lines) or None, expected)
        out["saved"] = saved == "yes"
        for key in ("record", "sector", "record_regmap"):
            if key in out:
                try:
                    out[key] = int(out[key])
                except ValueError:
                    raise self._bad("settings", f"{key} {out[key]}", expected) from None
        return out

    def listing(self):
        rows = []
        for line in self.command("list"):
            words = line.split()
            try:
                name, value, lo, hi, default = words[0], *map(int, words[1:5])
            except (ValueError, TypeError):
                raise self._bad("list", line, "'NAME VALUE MIN MAX DEFAULT UNIT' lines") from None
            rows.append({"name": name, "value": value, "min": lo, "max": hi, "default": default,
                         "unit": " ".join(words[5:])})
        return rows

    #: The one line ``save`` and ``load`` answer (firmware/README.md, "Commands").
    SAVE_LINE = re.compile(r"saved [0-9]+ parameters as flash record [0-9]+|"
                           r"unchanged: flash record [0-9]+ holds these values, nothing written")
    LOAD_LINE = re.compile(r"loaded [0-9]+ parameters from flash record [0-9]+")

    def _reply(self, command, pattern=None, expected=None, *, timeout=None):
        """The reply lines of ``command``: one line matching ``pattern``, or
        no line if ``pattern`` is None."""
        lines = self.command(command, timeout=timeout)
        if pattern is None:
            if lines:
                raise self._bad(command, lines[0], "no output line")
            return lines
        if not lines:
            raise self._bad(command, None, expected)
        for line in lines:
            if not pattern.fullmatch(line):
                raise self._bad(command, line, expected)
        if len(lines) > 1:
            raise self._bad(command, lines[1], expected)
        return lines

    def save(self):
        return self._reply("save", self.SAVE_LINE, "one line 'saved N parameters as flash record S' "
                           "or 'unchanged: ...'", timeout=max(self.timeout, FLASH_TIMEOUT_S))

    def load(self):
        return self._reply("load", self.LOAD_LINE, "one line 'loaded N parameters from flash record S'",
                           timeout=max(self.timeout, FLASH_TIMEOUT_S))

    def defaults(self):
        return self._reply("defaults")

    def reset_counters(self):
        return self._reply("reset-counters")

    def close(self):
        try:
            self.link.close()
        except (OSError, LinkError):
            pass
