#!/usr/bin/env python3
"""Synthesize the uplink core (flattened ``synth_ecp5``, ~4 min) and rank its
deepest paths with ``scripts/logic_depth.py``: the quick loop for timing
work, before a ~20 minute ``make reports``.

    python scripts/depth_check.py [--out build/depth] [-n 30] [--match REGEX] [--paths N]
"""
import argparse
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "hdl"))
sys.path.insert(0, str(ROOT / "scripts"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="build/depth", help="work directory (default build/depth)")
    ap.add_argument("--reuse", action="store_true", help="analyse the existing netlist.json")
    ap.add_argument("--ack-slots", type=int, default=64)
    ap.add_argument("--flow-entries", type=int, default=64)
    args, rest = ap.parse_known_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.reuse:
        from amaranth.back import rtlil
        from ackfilter.gateware.core import UplinkCore
        from ackfilter.gateware.lib.pin_harness import PinHarness
        from ackfilter.reports.tools import tool
        core = UplinkCore(ack_slots=args.ack_slots, flow_entries=args.flow_entries)
        (out / "harness.il").write_text(rtlil.convert(PinHarness(core), name="harness",
                                                      emit_src=False))
        (out / "synth.ys").write_text("read_rtlil harness.il\nsynth_ecp5 -top harness\n"
                                      "write_json netlist.json\n")
        t = time.monotonic()
        print(f"yosys synth_ecp5 in {out} ...", flush=True)
        subprocess.run([tool("yosys"), "-q", "-l", "synth.log", "synth.ys"], cwd=out, check=True)
        print(f"synthesis {time.monotonic() - t:.0f} s", flush=True)
    import logic_depth
    logic_depth.main([str(out / "netlist.json"), *rest])


if __name__ == "__main__":
    main()
