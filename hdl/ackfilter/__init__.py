"""ackfilter: FPGA TCP ACK filter for slow uplinks (Amaranth HDL)."""

__version__ = "0.1.0"
