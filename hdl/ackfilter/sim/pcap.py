"""pcap and pcapng files: the one reader and writer of the package.

Times are integer nanoseconds since the epoch (``seconds=True``: float
seconds, the unit of the trace generators). The reader takes classic pcap in
either byte order and resolution, pcapng (Enhanced and obsolete Packet
Blocks, any timestamp resolution and offset), gzipped or not; only Ethernet
(link type 1). The writer writes a nanosecond pcap.
"""

import gzip
import os
import struct
import sys
import zlib
from fractions import Fraction

__all__ = ["PcapError", "read_pcap", "write_pcap", "LINKTYPE_ETHERNET", "MAX_RECORD_BYTES"]

LINKTYPE_ETHERNET = 1


class PcapError(ValueError):
    """A capture file that cannot be used (missing, unreadable, not Ethernet)."""


# --- pcap I/O -------------------------------------------------------------------

#: Largest captured length a record may claim (tcpdump's largest snap length);
#: more means the file is corrupt, not a frame.
MAX_RECORD_BYTES = 262144


class _Truncated(Exception):
    """The file ends inside a record (``where``: what was cut)."""

    def __init__(self, where):
        self.where = where


def _read_exact(f, n, where):
    data = f.read(n)
    if len(data) != n:
        raise _Truncated(f"{where} ({len(data)} of {n} bytes)")
    return data


def _pcap_records(f, magic):
    """``(t_ns, data, wirelen, linktype)`` per record of a classic pcap file."""
    endian = "<" if magic[:1] in (b"\xd4", b"\x4d") else ">"
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    hdr = f.read(20)
    if len(hdr) < 20:
        raise PcapError("the pcap file header is cut short (not a capture, or an empty file)")
    linktype = struct.unpack(endian + "HHiIII", hdr)[5] & 0xFFFF
    n = 0
    while True:
        rec = f.read(16)
        if not rec:
            return
        n += 1
        if len(rec) < 16:
            raise _Truncated(f"inside the header of record {n} ({len(rec)} of 16 bytes)")
        sec, frac, caplen, wirelen = struct.unpack(endian + "IIII", rec)
        if caplen > MAX_RECORD_BYTES:
            raise PcapError(f"record {n} claims {caplen} captured bytes (more than "
                            f"{MAX_RECORD_BYTES}): the file is corrupt")
        data = _read_exact(f, caplen, f"inside the data of record {n}")
        yield sec * 10**9 + frac * (1 if nano else 1000), data, wirelen, linktype


def _pcapng_records(f, magic):
    """``(t_ns, data, wirelen, linktype)`` per packet of a pcapng file whose
    first 4 bytes (``magic``) were read (Enhanced and obsolete Packet Blocks;
    other blocks are skipped)."""
    endian = "<"
    interfaces = []          # (linktype, ticks per second, offset in seconds)
    n = 0
    while True:
        head = magic + f.read(4) if n == 0 else f.read(8)
        if not head:
            return
        n += 1
        if len(head) < 8:
            raise _Truncated(f"inside the header of block {n} ({len(head)} of 8 bytes)")
        if head[:4] == b"\x0a\x0d\x0d\x0a":              # Section Header Block
            bom = _read_exact(f, 4, f"inside section header block {n}")
            if bom == b"\x4d\x3c\x2b\x1a":
                endian = "<"
            elif bom == b"\x1a\x2b\x3c\x4d":
                endian = ">"
            else:
                raise PcapError(f"block {n}: bad byte-order magic in a section header")
            length = struct.unpack(endian + "I", head[4:])[0]
            if length < 28 or length % 4:
                raise PcapError(f"block {n}: bad section header length {length}")
            _read_exact(f, length - 12, f"inside section header block {n}")
            interfaces = []
            continue
        btype, length = struct.unpack(endian + "II", head)
        if length < 12 or length % 4:
            raise PcapError(f"block {n}: bad block length {length}")
        if length - 12 > MAX_RECORD_BYTES + 64:
            raise PcapError(f"block {n} claims {length} bytes: the file is corrupt")
        body = _read_exact(f, length - 8, f"inside block {n}")[:-4]
        if btype == 1:                                       # Interface Description Block
            linktype = struct.unpack_from(endian + "H", body)[0]
            resol, offset = 10**6, 0
            pos = 8
            while pos + 4 <= len(body):
                code, olen = struct.unpack_from(endian + "HH", body, pos)
                value = body[pos + 4:pos + 4 + olen]
                if code == 0:
                    break
                if code == 9 and olen == 1:                  # if_tsresol
                    resol = (2 if value[0] & 0x80 else 10) ** (value[0] & 0x7F)
                elif code == 14 and olen == 8:               # if_tsoffset, seconds
                    offset = struct.unpack(endian + "q", value)[0]
                pos += 4 + olen + (-olen % 4)
            interfaces.append((linktype, resol, offset))
        elif btype in (6, 2):                                # Enhanced / obsolete Packet Block
            if btype == 6:
                iface, ts_hi, ts_lo, caplen, wirelen = struct.unpack_from(endian + "IIIII", body)
            else:
                iface, _drops, ts_hi, ts_lo, caplen, wirelen = struct.unpack_from(endian + "HHIIII", body)
            if iface >= len(interfaces):
                raise PcapError(f"block {n}: packet of interface {iface}, which no block describes")
            linktype, resol, offset = interfaces[iface]
            data = body[20:20 + caplen]
            if len(data) < caplen:
                raise PcapError(f"block {n}: {caplen} captured bytes in a shorter block")
            t_ns = round(Fraction(((ts_hi << 32) | ts_lo) * 10**9, resol)) + offset * 10**9
            yield t_ns, data, wirelen, linktype
        elif btype == 3:
            raise PcapError(f"block {n} is a Simple Packet Block, which has no timestamp; "
                            "convert the file with editcap -F pcap")


def read_pcap(path, *, seconds=False, strict=False):
    """``[(t_ns, bytes)]`` from an Ethernet pcap or pcapng file (optionally
    gzipped), in file order; ``t_ns`` are integer nanoseconds since the epoch
    (``seconds=True``: float seconds, as the trace generators use).

    A file that ends inside a record (a capture cut short: tcpdump killed,
    a disk full, a copy interrupted) gives the whole frames before the cut and
    a warning on stderr naming the cut and how many frames were read, as
    Wireshark does: those frames are good, and refusing them would only send
    the user to editcap (``strict=True``: a :class:`PcapError` instead). Frames
    the capture cut at its snap length are replayed as captured, with a warning."""
    if not os.path.exists(path):
        raise PcapError(f"{path}: no such file")
    if os.path.isdir(path):
        raise PcapError(f"{path}: is a directory, not a capture file")
    frames = []
    snapped = 0
    try:
        with open(path, "rb") as raw:
            f = raw
            gzipped = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            if gzipped:
                f = gzip.GzipFile(fileobj=raw)
            magic = f.read(4)
            if magic == b"\x0a\x0d\x0d\x0a":
                records = _pcapng_records(f, magic)
            elif magic in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d"):
                records = _pcap_records(f, magic)
            else:
                raise PcapError(f"not a pcap or pcapng file (it starts with {magic.hex() or 'nothing'})")
            try:
                for t_ns, data, wirelen, linktype in records:
                    if linktype != LINKTYPE_ETHERNET:
                        raise PcapError(f"link type {linktype} is not Ethernet (1); "
                                        "only Ethernet captures can be replayed")
                    if wirelen > len(data):
                        snapped += 1
                    if data:
                        frames.append((t_ns, bytes(data)))
            except _Truncated as cut:
                if strict:
                    raise PcapError(f"cut short {cut.where}")
                print(f"warning: {path}: the file is truncated: it ends {cut.where}; "
                      f"replaying the {len(frames)} whole frames before the cut", file=sys.stderr)
            except EOFError:    # a gzip stream cut short
                if strict:
                    raise PcapError("the compressed file is cut short")
                print(f"warning: {path}: the compressed file is truncated; "
                      f"replaying the {len(frames)} whole frames before the cut", file=sys.stderr)
    except PcapError as e:
        raise PcapError(f"{path}: {e}")
    except (OSError, zlib.error) as e:
        raise PcapError(f"{path}: cannot read it ({e})")
    if snapped:
        print(f"warning: {path}: {snapped} frames were cut short by the capture's snap length; "
              "replaying the captured bytes only", file=sys.stderr)
    if seconds:
        return [(t_ns / 1e9, data) for t_ns, data in frames]
    return frames


def write_pcap(path, frames, *, seconds=False):
    """Write ``[(t_ns, bytes)]`` (``seconds=True``: float seconds) as a
    nanosecond-resolution Ethernet pcap."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, LINKTYPE_ETHERNET))
        for t, data in frames:
            t_ns = round(t * 1e9) if seconds else int(t)
            sec, nsec = divmod(t_ns, 10**9)
            f.write(struct.pack("<IIII", sec, nsec, len(data), len(data)))
            f.write(data)
