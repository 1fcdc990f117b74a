"""Rates, sizes and times written the way ``tc`` reads them.

Rates (``parse_rate``), as in tc(8):

=============================  ==================================
``bit`` or a bare number       bit/s
``kbit`` ``mbit`` ``gbit``     10^3, 10^6, 10^9 bit/s
``tbit``                       10^12 bit/s
``kibit`` ``mibit`` ``gibit``  2^10, 2^20, 2^30 bit/s
``tibit``                      2^40 bit/s
``bps``                        **bytes** per second (x8), as in tc
``kbps`` ``mbps`` ``gbps``     10^3, 10^6, 10^9 bytes/s
``tbps``                       10^12 bytes/s
``kibps`` ... ``tibps``        2^10 .. 2^40 bytes/s
=============================  ==================================

Units are case-insensitive; the number may have a fraction (``1.5mbit``), an
exponent (``1e6``) and a space before the unit. A prefix alone (``1M``,
``64k``) is refused, as tc refuses it: it could mean bits or bytes, so the
error says which to write (``1mbit`` or ``1mbps``). Numbers are read exactly (no
float rounding): a rate is a whole number of bit/s, and one that is not 0 but
rounds to 0 bit/s is an error, as is one that is not finite.
"""

import math
import re
from fractions import Fraction

__all__ = ["parse_rate", "format_rate", "parse_size", "format_size", "parse_time"]

_SI = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_IEC = {"ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}


def _rate_units():
    units = {"": 1}
    for prefix, mult in {**_SI, **_IEC}.items():
        units[prefix + "bit"] = mult
        units[prefix + "bps"] = 8 * mult
    return units


_RATE_UNITS = _rate_units()
RATE_FORMS = ("a number of bit/s (e.g. 256000), or a number with a unit: "
              "bit, kbit, mbit, gbit, tbit (SI), kibit, mibit, gibit, tibit (binary), "
              "or bps, kbps, mbps, gbps, tbps, kibps, mibps, gibps, tibps "
              "(BYTES per second, as in tc); e.g. 256kbit, 20mbit, 1.5gbit "
              "(a prefix alone, 1M or 64k, is refused: write 1mbit or 64kbit)")

_NUM_UNIT = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?\s*([a-zA-Z]*)\s*$")


def _split(text, what, forms):
    """``(value, unit)``: the number as an exact ``Fraction`` (``int`` or
    ``float`` input as given) and the unit in lower case."""
    if isinstance(text, bool):
        raise ValueError(f"invalid {what} {text!r}: expected {forms}")
    if isinstance(text, (int, float)):
        if not math.isfinite(text) or text < 0:
            raise ValueError(f"invalid {what} {text!r}: must be a finite number >= 0")
        return Fraction(text), ""
    m = _NUM_UNIT.match(str(text))
    if not m:
        raise ValueError(f"invalid {what} {text!r}: expected {forms}")
    if m.group(2) and abs(int(m.group(2))) > 1000:
        # Fraction takes 1e400 exactly (cheap), but not a million digits.
        raise ValueError(f"invalid {what} {text!r}: the exponent {m.group(2)} is out of range")
    number = m.group(1) + (f"e{m.group(2)}" if m.group(2) else "")
    return Fraction(number), m.group(3).lower()


def parse_rate(text):
    """Bit/s (an ``int``) for a tc-style rate such as ``"256kbit"``.

    >>> parse_rate("256kbit"), parse_rate("1mibit"), parse_rate("1kbps")
    (256000, 1048576, 8000)
    """
    value, unit = _split(text, "rate", RATE_FORMS)
    if unit in _SI.keys() - {""} or unit in _IEC:
        number = str(text).strip()[:-len(unit)].strip()
        raise ValueError(f"invalid rate {text!r}: tc has no unit {unit!r}: write {number}{unit}bit "
                         f"for bit/s or {number}{unit}bps for bytes per second")
    if unit not in _RATE_UNITS:
        raise ValueError(f"invalid rate {text!r}: unknown unit {unit!r}; expected {RATE_FORMS}")
    bps = round(value * _RATE_UNITS[unit])
    if bps == 0 and value != 0:
        raise ValueError(f"invalid rate {text!r}: it rounds to 0 bit/s (the smallest rate is 1 bit/s; "
                         "only 0 itself means no rate)")
    return bps


def format_rate(bps):
    """Short human form of a rate in bit/s: ``256kbit``, ``1.5mbit``, ``10gbit``."""
    bps = float(bps)
    for unit, mult in (("tbit", 10**12), ("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if bps >= mult:
            return f"{bps / mult:.4g}{unit}"
    return f"{bps:.4g}bit"


_SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "m": 2**20, "mb": 2**20, "g": 2**30, "gb": 2**30,
               "kbit": 128, "mbit": 2**17, "gbit": 2**27}
SIZE_FORMS = "bytes, or a number with b, k/kb, m/mb, g/gb (1024-based, as in tc) or kbit, mbit, gbit"


def parse_size(text):
    """Bytes for a tc-style size: ``1514``, ``32k`` (= 32768), ``1mb``."""
    value, unit = _split(text, "size", SIZE_FORMS)
    if unit not in _SIZE_UNITS:
        raise ValueError(f"invalid size {text!r}: unknown unit {unit!r}; expected {SIZE_FORMS}")
    return round(value * _SIZE_UNITS[unit])


def format_size(n):
    n = float(n)
    for unit, mult in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= mult:
            return f"{n / mult:.4g} {unit}"
    return f"{n:.0f} B"


_TIME_UNITS = {"": 1.0, "s": 1.0, "sec": 1.0, "secs": 1.0, "ms": 1e-3, "msec": 1e-3, "msecs": 1e-3,
               "us": 1e-6, "usec": 1e-6, "usecs": 1e-6, "ns": 1e-9}
TIME_FORMS = "seconds, or a number with s, ms, us or ns (e.g. 10ms)"


def parse_time(text):
    """Seconds (a ``float``) for a tc-style time: ``10ms``, ``1.5s``, ``250us``."""
    value, unit = _split(text, "time", TIME_FORMS)
    if unit not in _TIME_UNITS:
        raise ValueError(f"invalid time {text!r}: unknown unit {unit!r}; expected {TIME_FORMS}")
    return float(value) * _TIME_UNITS[unit]
