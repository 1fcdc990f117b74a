"""Simulation tools: the Verilated core driven from Python.

* :mod:`.replay` — Verilog generation, the C++ harness build, and a replay of frames through the RTL;
* :mod:`.pcap` — pcap/pcapng reading and writing (one definition, nanosecond timestamps);
* :mod:`.traces`, :mod:`.random_trace`, :mod:`.malformed` — trace generators (flows, the demo
  scenario; a random trace; the parser's edge cases);
* :mod:`.demo`, :mod:`.bench` — ``ackfilter demo`` and ``ackfilter bench``;
* :mod:`.fuzz` — the mutation campaign with its independent checker.
"""
