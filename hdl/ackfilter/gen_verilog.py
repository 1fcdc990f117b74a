"""Write the uplink core as Verilog for Verilator and other tools.

    python -m ackfilter.gen_verilog -o build/verilog/ackfilter_core.v [--ack-slots N] ...
"""

import argparse
import pathlib
import sys

from amaranth.back import verilog

from .core import UplinkCore

__all__ = ["generate", "main"]


def generate(path, *, ack_slots=64, flow_entries=64, data_buffer_bytes=32768):
    core = UplinkCore(ack_slots=ack_slots, flow_entries=flow_entries,
                      data_buffer_bytes=data_buffer_bytes)
    text = verilog.convert(core, name="ackfilter_core", emit_src=False)
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m ackfilter.gen_verilog", description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", required=True, help="Verilog file to write")
    ap.add_argument("--ack-slots", type=int, default=64, help="ACK queue positions (default 64)")
    ap.add_argument("--flow-entries", type=int, default=64, help="flow table entries (default 64)")
    ap.add_argument("--data-buffer-bytes", type=int, default=32768,
                    help="data ring size, a power of two (default 32768)")
    args = ap.parse_args(argv)
    try:
        generate(args.output, ack_slots=args.ack_slots, flow_entries=args.flow_entries,
                 data_buffer_bytes=args.data_buffer_bytes)
    except TypeError as e:
        ap.error(str(e))


if __name__ == "__main__":
    sys.exit(main())
