"""The firmware's saved-parameter records, written and read in Python from
their description in ``firmware/README.md`` (two sectors, each at most one
record: magic ``AFP2``, sequence number, register map version, count, then
``{name[24], value}`` entries and a CRC-32), never from the C code."""

import json
import struct
import zlib
from pathlib import Path

from ackfilter.soc import memmap as M

REGMAP = json.loads((Path(__file__).resolve().parents[1] / "host-tools" / "ackfilter_ctl"
                     / "regmap.json").read_text())
MAGIC = b"AFP2"
NAME_BYTES = 24
SECTOR = M.FLASH_SECTOR_BYTES
SECTORS = M.FLASH_PARAMS_SECTORS


def record(entries, *, seq=1, regmap=REGMAP["regmap_version"], magic=MAGIC):
    """A record's bytes for ``[(name, value), ...]``."""
    body = magic + struct.pack("<IHH", seq, regmap, len(entries))
    for name, value in entries:
        raw = name.encode()
        assert len(raw) < NAME_BYTES
        body += raw.ljust(NAME_BYTES, b"\0") + struct.pack("<I", value & 0xFFFF_FFFF)
    return body + struct.pack("<I", zlib.crc32(body))


def region(*sectors):
    """The parameter sectors' bytes: each given sector's content, erased after it."""
    assert len(sectors) <= SECTORS
    out = b""
    for data in sectors + (b"",) * (SECTORS - len(sectors)):
        assert len(data) <= SECTOR
        out += data + b"\xff" * (SECTOR - len(data))
    return out


def read(data):
    """``{sector: (seq, regmap, {name: value}) or "damaged" or None}`` of a
    region's bytes (values as unsigned 32-bit words)."""
    out = {}
    for s in range(SECTORS):
        sec = data[s * SECTOR:(s + 1) * SECTOR]
        if sec[:4] != MAGIC:
            out[s] = None
            continue
        seq, regmap, count = struct.unpack_from("<IHH", sec, 4)
        end = 12 + count * (NAME_BYTES + 4)
        if end + 4 > SECTOR or struct.unpack_from("<I", sec, end)[0] != zlib.crc32(sec[:end]):
            out[s] = "damaged"
            continue
        values = {}
        for i in range(count):
            off = 12 + i * (NAME_BYTES + 4)
            name = sec[off:off + NAME_BYTES].rstrip(b"\0").decode()
            values[name] = struct.unpack_from("<I", sec, off + NAME_BYTES)[0]
        out[s] = (seq, regmap, values)
    return out


def newest(data):
    """``(sector, seq, regmap, values)`` of the newest valid record, or None."""
    valid = [(v[0], s, v) for s, v in read(data).items() if isinstance(v, tuple)]
    if not valid:
        return None
    seq, s, (_, regmap, values) = max(valid)
    return s, seq, regmap, values


def len_record(count):
    """A record's length in bytes with ``count`` entries."""
    return 12 + count * (NAME_BYTES + 4) + 4
