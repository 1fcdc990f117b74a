"""ackfilter-ctl: the host tool of an ackfilter board.

It reads the register map from ``regmap.json`` (generated from the gateware's
parameter table, shipped inside this package) and never imports the gateware.
"""

__version__ = "0.1.0"
