"""Synthesis reports: area per block and Fmax per clock (``python -m ackfilter.reports``).

* :mod:`.report` — the targets, the Yosys/nextpnr runs and the tables;
* :mod:`.nextpnr` — the nextpnr log parser (shared with the board build).
"""
