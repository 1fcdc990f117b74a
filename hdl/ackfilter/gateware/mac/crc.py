"""CRC-32 of IEEE 802.3 (the Ethernet FCS), 8 bits a cycle, and its Python reference.

The FCS is the CRC-32 of polynomial 0x04C11DB7 (IEEE 802.3 clause 3.2.9),
computed LSB first (the reflected form, polynomial 0xEDB88320), register
preset to all ones, complemented at the end and sent least significant byte
first. Running the (uncomplemented) register over a frame *and* its FCS
leaves the constant :data:`CRC32_RESIDUE`, which is how the receiver checks a
frame without knowing where its FCS starts.

The register update is linear: next = S(crc) ^ D(byte), where S runs the
register over a zero byte and D is the register a byte leaves behind when
run from zero. The gateware takes D(byte) (:func:`crc32_data_term`) from its
user, who computes it a stage earlier, so the loop through the register is
only S: each next-state bit the XOR of at most 8 register bits and one term
bit, two LUT levels at 125 MHz. Both parts are derived from
:func:`crc32_update`, so the hardware and the reference cannot disagree.
"""

from functools import lru_cache

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["CRC32_POLY_REFLECTED", "CRC32_INIT", "CRC32_RESIDUE",
           "crc32_update", "crc32", "fcs_bytes", "crc32_term", "crc32_data_term", "CRC32"]

#: 0x04C11DB7 bit-reversed (IEEE 802.3 clause 3.2.9).
CRC32_POLY_REFLECTED = 0xEDB88320
#: Preset of the shift register (IEEE 802.3 clause 3.2.9 a).
CRC32_INIT = 0xFFFFFFFF
#: Register value after a frame followed by its correct FCS (not complemented).
CRC32_RESIDUE = 0xDEBB20E3


def crc32_update(crc, data):
    """Run the register ``crc`` (not complemented) over the bytes ``data``."""
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (CRC32_POLY_REFLECTED if crc & 1 else 0)
    return crc


def crc32(data):
    """The FCS value of ``data`` (equal to ``zlib.crc32(data)``)."""
    return crc32_update(CRC32_INIT, data) ^ 0xFFFFFFFF


def fcs_bytes(data):
    """The four FCS bytes of ``data`` in wire order."""
    return crc32(data).to_bytes(4, "little")


def crc32_term(byte):
    """D(byte): the register after ``byte`` when run from zero."""
    return crc32_update(0, bytes([byte]))


@lru_cache(maxsize=None)
def _matrices():
    """For each next-state bit: the register bits of S and the byte bits of D."""
    state = tuple(tuple(i for i in range(32) if crc32_update(1 << i, b"\0") >> out & 1)
                  for out in range(32))
    data = tuple(tuple(j for j in range(8) if crc32_term(1 << j) >> out & 1)
                 for out in range(32))
    return state, data


def crc32_data_term(byte):
    """The Amaranth expression of D(``byte``) (32 bits; bit 0 of ``byte`` is
    first on the wire). Register it and give it to :class:`CRC32` a cycle later."""
    _, data = _matrices()
    return Cat(*[Cat(*[byte[j] for j in bits]).xor() if bits else C(0, 1) for bits in data])


class CRC32(wiring.Component):
    """The FCS register, one byte a cycle.

    Ports
    -----
    init : In(1)
        Load :data:`CRC32_INIT` (has priority over ``en``).
    en, term : In(1), In(32)
        Run the register over the byte whose :func:`crc32_data_term` is
        ``term``.
    crc : Out(32)
        The register (not complemented): ``~crc`` is the FCS so far, sent
        least significant byte first. A reset does not touch it: it holds
        its value until the next ``init``.
    residue_ok : Out(1)
        Registered: ``crc`` was equal to :data:`CRC32_RESIDUE` in the previous
        cycle, i.e. the bytes up to then ended with a correct FCS. Compared
        in four registered byte slices plus a 4-input AND, so it stays
        shallow at 125 MHz; it lags ``crc`` by one cycle.
    """

    def __init__(self):
        super().__init__({
            "init":       In(1),
            "en":         In(1),
            "term":       In(32),
            "crc":        Out(32, init=CRC32_INIT),
            "residue_ok": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        state, _ = _matrices()
        # No reset: every frame loads the register (``init``) before its
        # first byte, and the reset net, routed from its synchroniser to the
        # register's set/reset input beside ``init``, was the TX clock's
        # critical path (rev 7.0: 5.3 ns of routing, +5.7 %).
        crc = Signal(32, init=CRC32_INIT, reset_less=True)
        m.d.comb += self.crc.eq(crc)
        shifted = Cat(*[Cat(*[crc[i] for i in bits]).xor() for bits in state])
        with m.If(self.init):
            m.d.sync += crc.eq(CRC32_INIT)
        with m.Elif(self.en):
            m.d.sync += crc.eq(shifted ^ self.term)
        slice_ok = Signal(4)
        for k in range(4):
            m.d.sync += slice_ok[k].eq(crc[8 * k:8 * k + 8] == (CRC32_RESIDUE >> 8 * k) & 0xFF)
        m.d.comb += self.residue_ok.eq(slice_ok.all())
        return m
