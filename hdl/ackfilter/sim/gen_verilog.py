"""Write a simulation top as Verilog for Verilator and other tools.

    python -m ackfilter.sim.gen_verilog -o build/verilog/ackfilter_core.v [--top core] [--ack-slots N] ...

Tops (``--top``), each with the module name its harnesses use:

* ``core`` -> ``ackfilter_core``: :class:`~ackfilter.gateware.core.UplinkCoreTop`,
  the uplink core with flat ports (the cocotb benches);
* ``core-replay`` -> ``ackfilter_core``: the same with its reset registered
  (the C++ replay harness: a faster simulation, see ``UplinkCoreTop``);
* ``mac`` -> ``mac_top``: :class:`~ackfilter.gateware.mac.sim_top.MACSimTop`;
* ``board`` -> ``board_top``: :class:`~ackfilter.board.sim_top.BoardSimTop`.

The size options apply to all but ``mac``.
"""

import argparse
import pathlib
import sys

from amaranth.back import verilog

from .. import params as P

__all__ = ["TOPS", "generate", "main"]

#: ``--top`` name -> Verilog module name.
TOPS = {"core": "ackfilter_core", "core-replay": "ackfilter_core", "mac": "mac_top",
        "board": "board_top"}


def _top(top, sizes):
    if top in ("core", "core-replay"):
        from ..gateware.core import UplinkCoreTop
        return UplinkCoreTop(registered_reset=top == "core-replay", **sizes)
    if top == "mac":
        from ..gateware.mac.sim_top import MACSimTop
        return MACSimTop()
    if top == "board":
        from ..board.sim_top import BoardSimTop
        return BoardSimTop(**sizes)
    raise ValueError(f"unknown top {top!r}; known: {', '.join(TOPS)}")


def generate(path, *, top="core", **sizes):
    """Write ``top`` (a :data:`TOPS` name) elaborated with ``sizes``
    (``ack_slots``, ``flow_entries``, ``data_buffer_bytes``) to ``path``."""
    text = verilog.convert(_top(top, sizes), name=TOPS[top], emit_src=False)
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m ackfilter.sim.gen_verilog",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", required=True, help="Verilog file to write")
    ap.add_argument("--top", choices=TOPS, default="core", help="which top (default core)")
    ap.add_argument("--ack-slots", type=int,
                    help=f"ACK queue positions (default {P.ACK_SLOTS})")
    ap.add_argument("--flow-entries", type=int,
                    help=f"flow table entries (default {P.FLOW_ENTRIES})")
    ap.add_argument("--data-buffer-bytes", type=int,
                    help=f"data buffer size, a power of two (default {P.DATA_BUFFER_BYTES})")
    ap.add_argument("--flow-queues", type=int, choices=(0, 1),
                    help=f"1: upload data in per-flow queues, 0: one data FIFO "
                         f"(spec section 12; default {int(P.FLOW_QUEUES)})")
    ap.add_argument("--host-buckets", type=int,
                    help=f"host fairness's buckets, 0: flows only (spec section 12; default {P.HOST_BUCKETS})")
    args = ap.parse_args(argv)
    sizes = {k: v for k, v in (("ack_slots", args.ack_slots), ("flow_entries", args.flow_entries),
                               ("data_buffer_bytes", args.data_buffer_bytes),
                               ("flow_queues", args.flow_queues),
                               ("host_buckets", args.host_buckets)) if v is not None}
    if sizes and args.top == "mac":
        ap.error("the mac top takes no size options")
    try:
        generate(args.output, top=args.top, **sizes)
    except TypeError as e:
        ap.error(str(e))


if __name__ == "__main__":
    sys.exit(main())
