"""Ethernet MAC: RGMII pads, RGMII <-> GMII conversion, receive and transmit cores.

See :class:`~ackfilter.mac.mac.EthernetMAC` for the whole port and how to bind
its clock domains.
"""

from amaranth.lib import fifo as _fifo


def _gray_decode_tree(val):
    """Gray to binary, bit i the XOR of bits i and up, each a reduction tree.

    Amaranth 0.5's ``AsyncFIFO`` decodes the other side's pointer with a
    ripple chain of XORs (``lib.fifo._gray_decode``), which Yosys/ABC9 maps
    ten LUTs deep for the 11-bit pointers of the MACs' 1024-word FIFOs: too
    deep for 125 MHz. Same function, log-depth structure.
    """
    from amaranth.hdl import Cat
    return Cat(*[val[i:].xor() for i in range(len(val))])


# Used by every AsyncFIFO elaborated from here on (amaranth is pinned to 0.5.10).
_fifo._gray_decode = _gray_decode_tree
