"""Ethernet MAC: RGMII pads, RGMII <-> GMII conversion, receive and transmit cores.

See :class:`~ackfilter.gateware.mac.mac.EthernetMAC` for the whole port and how to bind
its clock domains.
"""
