#!/usr/bin/env python3
"""A VLAN subinterface in user space, for kernels built without 802.1Q.

    vlan_relay.py TAP PARENT TPID:VID[,TPID:VID]

Creates the TAP device ``TAP`` and relays frames between it and the Ethernet
device ``PARENT``: a frame the kernel sends on ``TAP`` leaves ``PARENT`` with
the given tags pushed after the MAC addresses (outermost first); a frame
arriving on ``PARENT`` with exactly that tag stack reaches ``TAP`` with the
tags popped. Everything else on ``PARENT`` is left alone. So ``TAP`` behaves
like ``ip link add link PARENT name TAP type vlan ...`` (stacked for QinQ),
and tcpdump on ``PARENT`` sees the tagged frames.

The kernel moves a received frame's outer tag into the packet's metadata
(skb_vlan_untag); it is read back here from PACKET_AUXDATA. Runs until
killed; used by ``scripts/make_captures.sh`` only.
"""

import fcntl
import os
import select
import socket
import struct
import sys

TUNSETIFF = 0x400454CA
IFF_TAP, IFF_NO_PI = 0x0002, 0x1000
ETH_P_ALL = 0x0003
SOL_PACKET, PACKET_AUXDATA = 263, 8
PACKET_OUTGOING = 4
TP_STATUS_VLAN_VALID, TP_STATUS_VLAN_TPID_VALID = 0x10, 0x40
AUXDATA = struct.Struct("=IIIHHHH")   # struct tpacket_auxdata


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    tap_name, parent, spec = argv
    tags = []
    for item in spec.split(","):
        tpid, vid = item.split(":")
        tags.append((int(tpid, 16), int(vid)))
    tag_bytes = b"".join(struct.pack("!HH", tpid, vid) for tpid, vid in tags)

    tap = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(tap, TUNSETIFF, struct.pack("16sH", tap_name.encode(), IFF_TAP | IFF_NO_PI))
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.bind((parent, 0))
    sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    aux_space = socket.CMSG_SPACE(AUXDATA.size)
    print("ready", flush=True)

    while True:
        ready, _, _ = select.select([tap, sock], [], [])
        if tap in ready:
            frame = os.read(tap, 65536)
            sock.send(frame[:12] + tag_bytes + frame[12:])
        if sock in ready:
            frame, ancdata, _flags, addr = sock.recvmsg(65536, aux_space)
            if addr[2] == PACKET_OUTGOING:
                continue
            for level, kind, data in ancdata:
                if level == SOL_PACKET and kind == PACKET_AUXDATA:
                    status, _len, _snap, _mac, _net, tci, tpid = AUXDATA.unpack(data[:AUXDATA.size])
                    if status & TP_STATUS_VLAN_VALID:
                        if not status & TP_STATUS_VLAN_TPID_VALID:
                            tpid = 0x8100
                        frame = frame[:12] + struct.pack("!HH", tpid, tci) + frame[12:]
            if frame[12:12 + len(tag_bytes)] == tag_bytes:
                try:
                    os.write(tap, frame[:12] + frame[12 + len(tag_bytes):])
                except OSError:       # TAP not up yet: the frame is lost, as on a real link
                    pass


if __name__ == "__main__":
    main(sys.argv[1:])
