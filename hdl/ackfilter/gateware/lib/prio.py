"""Priority encoders built as balanced trees (log2(n) levels of 2:1 muxes)."""

from amaranth.hdl import *

__all__ = ["lowest_set"]


def lowest_set(bits):
    """``(any, index)`` of the lowest set bit of the Value ``bits``.

    A linear chain of ``Mux`` is ``n`` levels deep; this tree is ``log2(n)``,
    which is what lets the flow CAM and the buffer pool close timing.
    """
    n = len(bits)
    if n == 1:
        return bits[0], C(0, 1)
    half = 1 << ((n - 1).bit_length() - 1)
    any_lo, idx_lo = lowest_set(bits[:half])
    any_hi, idx_hi = lowest_set(bits[half:])
    width = (n - 1).bit_length()
    return any_lo | any_hi, Mux(any_lo, idx_lo, C(half, width) | idx_hi)
