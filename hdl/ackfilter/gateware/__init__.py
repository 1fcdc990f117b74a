"""The gateware: every Amaranth block that becomes hardware.

* :mod:`.lib` — stream records, priority encoders, free-list/buffer pool;
* :mod:`.parser`, :mod:`.ingress` — frame parsing and classification, ACK slot and data ring writes;
* :mod:`.flow_cam`, :mod:`.queue_manager` — the flow table and the ACK queue (supersession, drops);
* :mod:`.egress`, :mod:`.shaper` — ACKs-first scheduling with a data share, link-accounted shaping;
* :mod:`.csr` — the parameter and counter registers (from :mod:`ackfilter.params`);
* :mod:`.core` — the uplink core that joins them, and its flat-port Verilog top;
* :mod:`.mac` — the RGMII Ethernet MAC.

The board that wraps them is :mod:`ackfilter.board`.
"""
