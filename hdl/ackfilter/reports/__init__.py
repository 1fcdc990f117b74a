"""Synthesis reports: area per block and Fmax per clock (``python -m ackfilter.reports``).

* :mod:`.report` — the command line;
* :mod:`.targets` — what is built (the board, the core in a pin harness);
* :mod:`.tools` — the Yosys and nextpnr runs, a sweep of sizes;
* :mod:`.parse` — their output read (nextpnr's log: :mod:`ackfilter.board.nextpnr`);
* :mod:`.markdown` — the tables;
* :mod:`.cpu_eval` — the control plane's CPU candidates compared.
"""
